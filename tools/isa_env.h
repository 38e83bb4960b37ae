// The kernel-level overrides of the environment, read once at start-up by the mains (the
// `strata` CLI's, the tests' and the benchmarks') and passed to kernels::init_cpu_kernels:
// STRATA_NO_AVX512 caps the kernels at AVX2, STRATA_NO_AVX2 at the scalar reference, and
// STRATA_NO_AVX512_BF16 turns off the AVX512_BF16 dot products, STRATA_NO_AVX_VNNI the
// AVX2 level's AVX-VNNI kernels and STRATA_NO_AMX the AVX-512 level's AMX GEMMs, each when
// set to anything but "" or "0".
#pragma once

#include <cstdlib>
#include <string_view>

#include "kernels/quant/traits.h"

namespace strata::tools {

inline bool env_flag_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

inline kernels::IsaOverrides isa_overrides_from_env() {
  kernels::IsaOverrides o;
  o.no_avx512 = env_flag_set("STRATA_NO_AVX512");
  o.no_avx2 = env_flag_set("STRATA_NO_AVX2");
  o.no_avx512_bf16 = env_flag_set("STRATA_NO_AVX512_BF16");
  o.no_avx_vnni = env_flag_set("STRATA_NO_AVX_VNNI");
  o.no_amx = env_flag_set("STRATA_NO_AMX");
  return o;
}

}  // namespace strata::tools
