// Force-included into src/kernels/quant/traits.cpp by tests/fuzz/fuzz.mk: clang 14 (the
// fuzzers' compiler; the main build uses GCC) rejects __builtin_cpu_supports("f16c").
// This answers "f16c" from CPUID and forwards the features clang knows; a feature it does
// not list reads as absent, so the kernels fall back to a lower ISA, never a wrong one.
#pragma once

#include <cpuid.h>

#include <cstring>

inline bool strata_fuzz_cpu_supports(const char* f) {
  if (std::strcmp(f, "f16c") == 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }
#define STRATA_FUZZ_FEATURE(name) \
  if (std::strcmp(f, name) == 0) return __builtin_cpu_supports(name);
  STRATA_FUZZ_FEATURE("avx2")
  STRATA_FUZZ_FEATURE("fma")
  STRATA_FUZZ_FEATURE("avx512f")
  STRATA_FUZZ_FEATURE("avx512bw")
  STRATA_FUZZ_FEATURE("avx512vl")
  STRATA_FUZZ_FEATURE("avx512dq")
  STRATA_FUZZ_FEATURE("avx512vnni")
  STRATA_FUZZ_FEATURE("avx512bf16")
#undef STRATA_FUZZ_FEATURE
  return false;
}

#define __builtin_cpu_supports(f) strata_fuzz_cpu_supports(f)
