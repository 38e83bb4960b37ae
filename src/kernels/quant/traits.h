// Per-type kernels: conversion to and from float and the dot product used by matmul.
//
// A weight type's vec_dot takes one weight row and one activation row that has already
// been converted to `vec_dot_type`:
//   F32, F16, BF16 -> F32 (activations stay float; weights are widened in registers)
//   Q8_0, Q4_0     -> Q8_0
//   Q4_1, Q5_0, Q5_1, IQ4_NL -> Q8_0 (Q4_1/Q5_1 sum the activation block themselves)
//   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS -> Q8_K
// Q8_K is an activation-only type: it has to_float/from_float but no vec_dot.
//
// type_traits() returns the fastest kernels this CPU runs (see cpu_kernel_isa(): AVX-512
// VNNI for Q8_0/Q4_0 where present, AVX2+FMA+F16C for the rest, otherwise the scalar
// reference); reference_type_traits() always returns the scalar ones.
// Guarantees shared by both tables:
//   - to_float is bit-exact with the format definition (blocks.h), in both tables.
//   - from_float of an activation type (F32/Q8_0/Q8_K) gives identical bytes in both
//     tables, so activations are converted the same way whichever table is used.
//   - vec_dot results differ between tables only by float rounding (see tests/kernels).
//   - Each vec_dot is a pure function of its inputs with a fixed reduction order, which is
//     what makes matmul batch- and thread-invariant.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace strata::kernels {

struct TypeTraits {
  DType type;
  // n must be a multiple of the type's block size.
  void (*to_float)(const void* src, float* dst, int64_t n);
  void (*from_float)(const float* src, void* dst, int64_t n);
  DType vec_dot_type;
  // Dot product of n elements; nullptr for activation-only types (Q8_K).
  float (*vec_dot)(int64_t n, const void* w_row, const void* act_row);
  // Many dot products at once: y[t * ldy + r] = vec_dot(n, w + r * w_stride, a + t * a_stride)
  // for r in [0, n_rows), t in [0, n_tokens), strides in bytes. Every output is
  // bit-identical to vec_dot's (the AVX2 kernels share one micro-kernel between the two;
  // the others loop over vec_dot), so tiling cannot change results. nullptr with vec_dot.
  void (*gemm)(int64_t n, const void* w, int64_t w_stride, int64_t n_rows, const void* a,
               int64_t a_stride, int64_t n_tokens, float* y, int64_t ldy);
};

// Throws strata::Error for types without kernels.
const TypeTraits& type_traits(DType t);
const TypeTraits& reference_type_traits(DType t);

// Instruction-set levels of the kernel tables, each a superset of the one before.
enum class KernelIsa {
  scalar,       // the reference kernels
  avx2,         // AVX2 + FMA + F16C
  avx512_vnni,  // avx2 plus AVX-512 F/BW/VL/DQ/VNNI (Q8_0 and Q4_0 matmuls)
};
const char* kernel_isa_name(KernelIsa isa);

// Lower levels forced on a capable machine, to test or compare them. The kernels do not
// read the environment: the mains do (tools/isa_env.h: STRATA_NO_AVX512, STRATA_NO_AVX2,
// STRATA_NO_AVX512_BF16, STRATA_NO_AVX_VNNI, STRATA_NO_AMX) and pass the result to
// init_cpu_kernels.
struct IsaOverrides {
  bool no_avx512 = false;       // cap the level at avx2
  bool no_avx2 = false;         // cap the level at scalar
  bool no_avx512_bf16 = false;  // no AVX512_BF16 dot products
  bool no_avx_vnni = false;     // the avx2 level without its AVX-VNNI kernels
  bool no_amx = false;          // the avx512_vnni level without its AMX GEMMs
  bool operator==(const IsaOverrides&) const = default;
};

// What the kernels of a process may use.
struct CpuKernelLevels {
  KernelIsa isa = KernelIsa::scalar;
  bool avx512_bf16 = false;  // isa is avx512_vnni and the CPU has AVX512_BF16
  bool avx_vnni = false;     // isa is at least avx2 and the CPU has AVX-VNNI (VEX vpdpbusd)
  bool amx_int8 = false;     // isa is avx512_vnni, the CPU has AMX-TILE and AMX-INT8, and
                             // the OS granted this process the tile state
};

// The best levels this CPU (and OS) supports, capped by `overrides`. Reads the CPU, and
// where it has AMX asks Linux for the tile state (arch_prctl ARCH_REQ_XCOMP_PERM, granted
// to the whole process; without it the first tile instruction faults): refused, the level
// has no AMX.
CpuKernelLevels detect_cpu_kernels(const IsaOverrides& overrides);

// Fixes the levels of this process at detect_cpu_kernels(overrides). Call it once at the
// start of main, before any kernel runs; the first query without it fixes the CPU's own
// levels. Calling it again with the same overrides does nothing; with other overrides,
// once the levels are fixed, it throws strata::Error.
void init_cpu_kernels(const IsaOverrides& overrides);

// The level of this process (see init_cpu_kernels).
KernelIsa cpu_kernel_isa();

// cpu_kernel_isa() >= avx2.
bool cpu_has_avx2_fma();

// cpu_kernel_isa() >= avx512_vnni and the CPU has AVX512_BF16 (bf16 dot products, used by
// attention over bf16 KV caches), unless the overrides turned it off.
bool cpu_has_avx512_bf16();

// The CPU has AVX-VNNI and the overrides allow it: at the avx2 level the group layouts'
// matmuls (Q4_0/Q8_0/Q4_1/Q5_0/Q5_1/IQ4_NL_X16, the K pairs) use vpdpbusd on 256-bit vectors.
bool cpu_has_avx_vnni();

// cpu_kernel_isa() is avx512_vnni and amx_int8 (CpuKernelLevels): the group layouts'
// GEMMs of 32 tokens or more (Q4_0/Q8_0/Q4_1/Q5_0/Q5_1/IQ4_NL_X16, the K pairs) run on AMX
// tiles (TDPBSSD), bit-identical to the VNNI kernels.
bool cpu_has_amx_int8();

// "avx2+fma", with "+avx-vnni" where the avx2 level uses AVX-VNNI, "avx512-vnni+amx" with
// AMX, or kernel_isa_name.
std::string cpu_kernels_name();

// The table of one level, for comparing levels in tests and benchmarks; throws
// strata::Error when `isa` is above cpu_kernel_isa(). The avx2 table is the plain AVX2 one.
const TypeTraits& type_traits_for(KernelIsa isa, DType t);

// The avx2 level's table with its AVX-VNNI kernels; throws strata::Error without
// cpu_has_avx_vnni().
const TypeTraits& type_traits_avx_vnni(DType t);

// The avx512_vnni table with its AMX GEMMs: the tile instructions themselves (throws
// strata::Error without cpu_has_amx_int8()), or `emulated`: each tile instruction done by a
// scalar model of it and every token count through the tiles, so the AMX GEMMs are tested
// on any AVX-512 VNNI CPU (throws below that level).
enum class AmxTiles { hardware, emulated };
const TypeTraits& type_traits_amx(DType t, AmxTiles tiles);

// Bytes of a row of `n` elements of type t; throws Error when n is negative or not a
// multiple of the block size (the message names `what`).
int64_t row_bytes(DType t, int64_t n, const char* what = "row length");

}  // namespace strata::kernels
