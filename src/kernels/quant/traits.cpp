// The per-type kernel tables and the run-time choice between scalar and AVX2 kernels.
#include "kernels/quant/traits.h"

#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "core/error.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kernels_ref.h"

namespace strata::kernels {
namespace {

constexpr size_t kMaxTypeId = 83;  // GGUF ids are small; the internal layouts are 64-82
using Table = std::array<TypeTraits, kMaxTypeId>;

size_t index_of(DType t) {
  return static_cast<size_t>(t);
}

void add(Table& table, const TypeTraits& traits) {
  table[index_of(traits.type)] = traits;
}

using VecDotFn = float (*)(int64_t, const void*, const void*);
using GemmFn = void (*)(int64_t, const void*, int64_t, int64_t, const void*, int64_t, int64_t,
                        float*, int64_t);

// TypeTraits::gemm for kernels without a tiled version: one vec_dot per output, so the
// results are vec_dot's by construction.
template <VecDotFn vec_dot>
void gemm_by_vec_dot(int64_t n, const void* w, int64_t w_stride, int64_t n_rows, const void* a,
                     int64_t a_stride, int64_t n_tokens, float* y, int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < n_rows; ++r)
      y[t * ldy + r] = vec_dot(n, wp + r * w_stride, ap + t * a_stride);
  }
}

// The block structs must agree with the dtype table that sizes tensors read from files.
void check_block_size(DType t, size_t struct_size, int64_t elements) {
  const DTypeInfo info = dtype_info(t);
  if (info.type_size != struct_size || info.block_size != elements) {
    throw Error("kernels: block struct for " + std::string(info.name) +
                " disagrees with dtype_info()");
  }
}

Table build_reference() {
  check_block_size(DType::Q8_0, sizeof(BlockQ8_0), kQK8_0);
  check_block_size(DType::Q4_0, sizeof(BlockQ4_0), kQK8_0);
  check_block_size(DType::Q4_K, sizeof(BlockQ4_K), kQK_K);
  check_block_size(DType::Q6_K, sizeof(BlockQ6_K), kQK_K);
  check_block_size(DType::Q8_K, sizeof(BlockQ8_K), kQK_K);
  check_block_size(DType::Q4_1, sizeof(BlockQ4_1), kQK8_0);
  check_block_size(DType::Q5_0, sizeof(BlockQ5_0), kQK8_0);
  check_block_size(DType::Q5_1, sizeof(BlockQ5_1), kQK8_0);
  check_block_size(DType::IQ4_NL, sizeof(BlockIQ4_NL), kQK8_0);
  check_block_size(DType::Q2_K, sizeof(BlockQ2_K), kQK_K);
  check_block_size(DType::Q3_K, sizeof(BlockQ3_K), kQK_K);
  check_block_size(DType::Q5_K, sizeof(BlockQ5_K), kQK_K);
  check_block_size(DType::IQ4_XS, sizeof(BlockIQ4_XS), kQK_K);
  check_block_size(DType::Q4_0_X16, sizeof(BlockQ4_0x16), kQKX16);
  check_block_size(DType::Q8_0_X16A, sizeof(BlockQ8_0x16A), kQKX16);
  check_block_size(DType::Q8_0_X16, sizeof(BlockQ8_0x16), kQKX16);
  check_block_size(DType::Q6_K_X16, sizeof(BlockQ6_Kx16), kQK_K);
  check_block_size(DType::Q8_K_X16A, sizeof(BlockQ8_Kx16A), kQK_K);
  check_block_size(DType::Q4_K_X16, sizeof(BlockQ4_Kx16), kQK_K);
  check_block_size(DType::Q5_K_X16, sizeof(BlockQ5_Kx16), kQK_K);
  check_block_size(DType::IQ4_XS_X16, sizeof(BlockIQ4_XSx16), kQK_K);
  check_block_size(DType::Q3_K_X16, sizeof(BlockQ3_Kx16), kQK_K);
  check_block_size(DType::Q4_1_X16, sizeof(BlockQ4_1x16), kQKX16);
  check_block_size(DType::Q5_0_X16, sizeof(BlockQ5_0x16), kQKX16);
  check_block_size(DType::Q5_1_X16, sizeof(BlockQ5_1x16), kQKX16);
  check_block_size(DType::IQ4_NL_X16, sizeof(BlockIQ4_NLx16), kQKX16);
  check_block_size(DType::Q2_K_X16, sizeof(BlockQ2_Kx16), kQK_K);
  check_block_size(DType::Q4_K_X16P, sizeof(BlockQ4_Kx16P), kQKX16);
  check_block_size(DType::Q5_K_X16P, sizeof(BlockQ5_Kx16P), kQKX16);
  check_block_size(DType::IQ4_XS_X16P, sizeof(BlockIQ4_XSx16P), kQKX16);
  Table t{};
  add(t, {DType::F32, ref::f32_to_float, ref::f32_from_float, DType::F32, ref::f32_vec_dot,
          gemm_by_vec_dot<ref::f32_vec_dot>});
  add(t, {DType::F16, ref::f16_to_float, ref::f16_from_float, DType::F32, ref::f16_vec_dot,
          gemm_by_vec_dot<ref::f16_vec_dot>});
  add(t, {DType::BF16, ref::bf16_to_float, ref::bf16_from_float, DType::F32, ref::bf16_vec_dot,
          gemm_by_vec_dot<ref::bf16_vec_dot>});
  add(t, {DType::Q8_0, ref::q8_0_to_float, ref::q8_0_from_float, DType::Q8_0, ref::q8_0_vec_dot,
          gemm_by_vec_dot<ref::q8_0_vec_dot>});
  add(t, {DType::Q4_0, ref::q4_0_to_float, ref::q4_0_from_float, DType::Q8_0, ref::q4_0_vec_dot,
          gemm_by_vec_dot<ref::q4_0_vec_dot>});
  add(t, {DType::Q4_K, ref::q4_k_to_float, ref::q4_k_from_float, DType::Q8_K, ref::q4_k_vec_dot,
          gemm_by_vec_dot<ref::q4_k_vec_dot>});
  add(t, {DType::Q6_K, ref::q6_k_to_float, ref::q6_k_from_float, DType::Q8_K, ref::q6_k_vec_dot,
          gemm_by_vec_dot<ref::q6_k_vec_dot>});
  add(t, {DType::Q4_1, ref::q4_1_to_float, ref::q4_1_from_float, DType::Q8_0, ref::q4_1_vec_dot,
          gemm_by_vec_dot<ref::q4_1_vec_dot>});
  add(t, {DType::Q5_0, ref::q5_0_to_float, ref::q5_0_from_float, DType::Q8_0, ref::q5_0_vec_dot,
          gemm_by_vec_dot<ref::q5_0_vec_dot>});
  add(t, {DType::Q5_1, ref::q5_1_to_float, ref::q5_1_from_float, DType::Q8_0, ref::q5_1_vec_dot,
          gemm_by_vec_dot<ref::q5_1_vec_dot>});
  add(t, {DType::IQ4_NL, ref::iq4_nl_to_float, ref::iq4_nl_from_float, DType::Q8_0,
          ref::iq4_nl_vec_dot, gemm_by_vec_dot<ref::iq4_nl_vec_dot>});
  add(t, {DType::Q2_K, ref::q2_k_to_float, ref::q2_k_from_float, DType::Q8_K, ref::q2_k_vec_dot,
          gemm_by_vec_dot<ref::q2_k_vec_dot>});
  add(t, {DType::Q3_K, ref::q3_k_to_float, ref::q3_k_from_float, DType::Q8_K, ref::q3_k_vec_dot,
          gemm_by_vec_dot<ref::q3_k_vec_dot>});
  add(t, {DType::Q5_K, ref::q5_k_to_float, ref::q5_k_from_float, DType::Q8_K, ref::q5_k_vec_dot,
          gemm_by_vec_dot<ref::q5_k_vec_dot>});
  add(t, {DType::IQ4_XS, ref::iq4_xs_to_float, ref::iq4_xs_from_float, DType::Q8_K,
          ref::iq4_xs_vec_dot, gemm_by_vec_dot<ref::iq4_xs_vec_dot>});
  add(t, {DType::Q8_K, ref::q8_k_to_float, ref::q8_k_from_float, DType::Q8_K, nullptr, nullptr});
  add(t, {DType::Q4_0_X16, ref::q4_0_x16_to_float, ref::q4_0_x16_from_float, DType::Q8_0_X16A,
          ref::q4_0_x16_vec_dot, gemm_by_vec_dot<ref::q4_0_x16_vec_dot>});
  add(t, {DType::Q8_0_X16, ref::q8_0_x16_to_float, ref::q8_0_x16_from_float, DType::Q8_0_X16A,
          ref::q8_0_x16_vec_dot, gemm_by_vec_dot<ref::q8_0_x16_vec_dot>});
  add(t, {DType::Q8_0_X16A, ref::q8_0_x16a_to_float, ref::q8_0_x16a_from_float, DType::Q8_0_X16A,
          nullptr, nullptr});
  add(t, {DType::Q6_K_X16, ref::q6_k_x16_to_float, ref::q6_k_x16_from_float, DType::Q8_K_X16A,
          ref::q6_k_x16_vec_dot, gemm_by_vec_dot<ref::q6_k_x16_vec_dot>});
  add(t, {DType::Q4_K_X16, ref::q4_k_x16_to_float, ref::q4_k_x16_from_float, DType::Q8_K_X16A,
          ref::q4_k_x16_vec_dot, gemm_by_vec_dot<ref::q4_k_x16_vec_dot>});
  add(t, {DType::Q5_K_X16, ref::q5_k_x16_to_float, ref::q5_k_x16_from_float, DType::Q8_K_X16A,
          ref::q5_k_x16_vec_dot, gemm_by_vec_dot<ref::q5_k_x16_vec_dot>});
  add(t, {DType::IQ4_XS_X16, ref::iq4_xs_x16_to_float, ref::iq4_xs_x16_from_float, DType::Q8_K_X16A,
          ref::iq4_xs_x16_vec_dot, gemm_by_vec_dot<ref::iq4_xs_x16_vec_dot>});
  add(t, {DType::Q3_K_X16, ref::q3_k_x16_to_float, ref::q3_k_x16_from_float, DType::Q8_K_X16A,
          ref::q3_k_x16_vec_dot, gemm_by_vec_dot<ref::q3_k_x16_vec_dot>});
  add(t, {DType::Q3_K_X16S, ref::q3_k_x16s_to_float, ref::q3_k_x16s_from_float, DType::Q8_K_X16A,
          ref::q3_k_x16s_vec_dot, gemm_by_vec_dot<ref::q3_k_x16s_vec_dot>});
  add(t, {DType::Q4_1_X16, ref::q4_1_x16_to_float, ref::q4_1_x16_from_float, DType::Q8_0_X16A,
          ref::q4_1_x16_vec_dot, gemm_by_vec_dot<ref::q4_1_x16_vec_dot>});
  add(t, {DType::Q5_0_X16, ref::q5_0_x16_to_float, ref::q5_0_x16_from_float, DType::Q8_0_X16A,
          ref::q5_0_x16_vec_dot, gemm_by_vec_dot<ref::q5_0_x16_vec_dot>});
  add(t, {DType::Q5_1_X16, ref::q5_1_x16_to_float, ref::q5_1_x16_from_float, DType::Q8_0_X16A,
          ref::q5_1_x16_vec_dot, gemm_by_vec_dot<ref::q5_1_x16_vec_dot>});
  add(t, {DType::IQ4_NL_X16, ref::iq4_nl_x16_to_float, ref::iq4_nl_x16_from_float, DType::Q8_0_X16A,
          ref::iq4_nl_x16_vec_dot, gemm_by_vec_dot<ref::iq4_nl_x16_vec_dot>});
  add(t, {DType::Q2_K_X16, ref::q2_k_x16_to_float, ref::q2_k_x16_from_float, DType::Q8_K_X16A,
          ref::q2_k_x16_vec_dot, gemm_by_vec_dot<ref::q2_k_x16_vec_dot>});
  add(t, {DType::Q4_K_X16P, ref::q4_k_x16p_to_float, ref::q4_k_x16p_from_float, DType::Q8_0_X16A,
          ref::q4_k_x16p_vec_dot, gemm_by_vec_dot<ref::q4_k_x16p_vec_dot>});
  add(t, {DType::Q5_K_X16P, ref::q5_k_x16p_to_float, ref::q5_k_x16p_from_float, DType::Q8_0_X16A,
          ref::q5_k_x16p_vec_dot, gemm_by_vec_dot<ref::q5_k_x16p_vec_dot>});
  add(t, {DType::IQ4_XS_X16P, ref::iq4_xs_x16p_to_float, ref::iq4_xs_x16p_from_float,
          DType::Q8_0_X16A, ref::iq4_xs_x16p_vec_dot, gemm_by_vec_dot<ref::iq4_xs_x16p_vec_dot>});
  add(t, {DType::Q8_K_X16A, ref::q8_k_x16a_to_float, ref::q8_k_x16a_from_float, DType::Q8_K_X16A,
          nullptr, nullptr});
  // Its Q8_0_X16A groups come first, which is all to_float reads.
  add(t, {DType::Q8_0_X16AT, ref::q8_0_x16a_to_float, ref::q8_0_x16at_from_float, DType::Q8_0_X16AT,
          nullptr, nullptr});
  return t;
}

// Which AMX GEMMs a table takes, if any.
enum class AmxGemms { none, hardware, emulated };

// Starts from the reference table and swaps in the kernels of each level up to `isa` where
// they exist (and the AMX GEMMs `amx` names). The quantizers for weight types stay scalar:
// they run once, when a model is converted.
Table build_fast(KernelIsa isa, bool avx_vnni, AmxGemms amx = AmxGemms::none) {
  Table t = build_reference();
  if (isa < KernelIsa::avx2) return t;
  auto& f16 = t[index_of(DType::F16)];
  f16.to_float = avx2::f16_to_float;
  f16.from_float = avx2::f16_from_float;
  f16.vec_dot = avx2::f16_vec_dot;
  auto& bf16 = t[index_of(DType::BF16)];
  bf16.to_float = avx2::bf16_to_float;
  bf16.from_float = avx2::bf16_from_float;
  bf16.vec_dot = avx2::bf16_vec_dot;
  bf16.gemm = avx2::bf16_gemm;
  f16.gemm = avx2::f16_gemm;
  t[index_of(DType::F32)].vec_dot = avx2::f32_vec_dot;
  t[index_of(DType::F32)].gemm = avx2::f32_gemm;
  t[index_of(DType::Q8_0)].from_float = avx2::q8_0_from_float;
  t[index_of(DType::Q8_0)].vec_dot = avx2::q8_0_vec_dot;
  t[index_of(DType::Q8_0)].gemm = avx2::q8_0_gemm;
  t[index_of(DType::Q4_0)].vec_dot = avx2::q4_0_vec_dot;
  t[index_of(DType::Q4_0)].gemm = avx2::q4_0_gemm;
  t[index_of(DType::Q8_K)].from_float = avx2::q8_k_from_float;
  auto set_kernels = [&t](DType type, VecDotFn vec_dot, GemmFn gemm) {
    t[index_of(type)].vec_dot = vec_dot;
    t[index_of(type)].gemm = gemm;
  };
  set_kernels(DType::Q4_1, avx2::q4_1_vec_dot, avx2::q4_1_gemm);
  set_kernels(DType::Q5_0, avx2::q5_0_vec_dot, avx2::q5_0_gemm);
  set_kernels(DType::Q5_1, avx2::q5_1_vec_dot, avx2::q5_1_gemm);
  set_kernels(DType::IQ4_NL, avx2::iq4_nl_vec_dot, avx2::iq4_nl_gemm);
  set_kernels(DType::Q2_K, avx2::q2_k_vec_dot, avx2::q2_k_gemm);
  set_kernels(DType::Q3_K, avx2::q3_k_vec_dot, avx2::q3_k_gemm);
  set_kernels(DType::Q5_K, avx2::q5_k_vec_dot, avx2::q5_k_gemm);
  set_kernels(DType::IQ4_XS, avx2::iq4_xs_vec_dot, avx2::iq4_xs_gemm);
  t[index_of(DType::Q8_K_X16A)].from_float =
      x16_from_float<BlockQ8_K, BlockQ8_Kx16A, avx2::q8_k_from_float, arrange_q8_k_x16a, kQK_K>;
  t[index_of(DType::Q8_0_X16A)].from_float =
      x16_from_float<BlockQ8_0, BlockQ8_0x16A, avx2::q8_0_from_float, arrange_q8_0_x16a>;
  t[index_of(DType::Q4_0_X16)].vec_dot = avx2::q4_0_x16_vec_dot;
  t[index_of(DType::Q4_0_X16)].gemm = avx2::q4_0_x16_gemm;
  t[index_of(DType::Q8_0_X16)].vec_dot = avx2::q8_0_x16_vec_dot;
  t[index_of(DType::Q8_0_X16)].gemm = avx2::q8_0_x16_gemm;
  t[index_of(DType::Q4_K)].vec_dot = avx2::q4_k_vec_dot;
  t[index_of(DType::Q4_K)].gemm = avx2::q4_k_gemm;
  t[index_of(DType::Q6_K)].vec_dot = avx2::q6_k_vec_dot;
  t[index_of(DType::Q6_K)].gemm = avx2::q6_k_gemm;
  t[index_of(DType::Q6_K_X16)].vec_dot = avx2::q6_k_x16_vec_dot;
  t[index_of(DType::Q6_K_X16)].gemm = avx2::q6_k_x16_gemm;
  set_kernels(DType::Q4_K_X16, avx2::q4_k_x16_vec_dot, avx2::q4_k_x16_gemm);
  set_kernels(DType::Q5_K_X16, avx2::q5_k_x16_vec_dot, avx2::q5_k_x16_gemm);
  set_kernels(DType::IQ4_XS_X16, avx2::iq4_xs_x16_vec_dot, avx2::iq4_xs_x16_gemm);
  set_kernels(DType::Q3_K_X16, avx2::q3_k_x16_vec_dot, avx2::q3_k_x16_gemm);
  set_kernels(DType::Q3_K_X16S, avx2::q3_k_x16s_vec_dot, avx2::q3_k_x16s_gemm);
  set_kernels(DType::Q2_K_X16, avx2::q2_k_x16_vec_dot, avx2::q2_k_x16_gemm);
  set_kernels(DType::Q4_1_X16, avx2::q4_1_x16_vec_dot, avx2::q4_1_x16_gemm);
  set_kernels(DType::Q5_0_X16, avx2::q5_0_x16_vec_dot, avx2::q5_0_x16_gemm);
  set_kernels(DType::Q5_1_X16, avx2::q5_1_x16_vec_dot, avx2::q5_1_x16_gemm);
  set_kernels(DType::IQ4_NL_X16, avx2::iq4_nl_x16_vec_dot, avx2::iq4_nl_x16_gemm);
  set_kernels(DType::Q4_K_X16P, avx2::q4_k_x16p_vec_dot, avx2::q4_k_x16p_gemm);
  set_kernels(DType::Q5_K_X16P, avx2::q5_k_x16p_vec_dot, avx2::q5_k_x16p_gemm);
  set_kernels(DType::IQ4_XS_X16P, avx2::iq4_xs_x16p_vec_dot, avx2::iq4_xs_x16p_gemm);
  if (avx_vnni) {
    set_kernels(DType::Q4_0_X16, avx2vnni::q4_0_x16_vec_dot, avx2vnni::q4_0_x16_gemm);
    set_kernels(DType::Q8_0_X16, avx2vnni::q8_0_x16_vec_dot, avx2vnni::q8_0_x16_gemm);
    set_kernels(DType::Q4_1_X16, avx2vnni::q4_1_x16_vec_dot, avx2vnni::q4_1_x16_gemm);
    set_kernels(DType::Q5_0_X16, avx2vnni::q5_0_x16_vec_dot, avx2vnni::q5_0_x16_gemm);
    set_kernels(DType::Q5_1_X16, avx2vnni::q5_1_x16_vec_dot, avx2vnni::q5_1_x16_gemm);
    set_kernels(DType::IQ4_NL_X16, avx2vnni::iq4_nl_x16_vec_dot, avx2vnni::iq4_nl_x16_gemm);
    set_kernels(DType::Q4_K_X16P, avx2vnni::q4_k_x16p_vec_dot, avx2vnni::q4_k_x16p_gemm);
    set_kernels(DType::Q5_K_X16P, avx2vnni::q5_k_x16p_vec_dot, avx2vnni::q5_k_x16p_gemm);
    set_kernels(DType::IQ4_XS_X16P, avx2vnni::iq4_xs_x16p_vec_dot, avx2vnni::iq4_xs_x16p_gemm);
    set_kernels(DType::Q6_K_X16, avx2vnni::q6_k_x16_vec_dot, avx2vnni::q6_k_x16_gemm);
    set_kernels(DType::Q4_K_X16, avx2vnni::q4_k_x16_vec_dot, avx2vnni::q4_k_x16_gemm);
    set_kernels(DType::Q5_K_X16, avx2vnni::q5_k_x16_vec_dot, avx2vnni::q5_k_x16_gemm);
    set_kernels(DType::IQ4_XS_X16, avx2vnni::iq4_xs_x16_vec_dot, avx2vnni::iq4_xs_x16_gemm);
    set_kernels(DType::Q3_K_X16, avx2vnni::q3_k_x16_vec_dot, avx2vnni::q3_k_x16_gemm);
    set_kernels(DType::Q3_K_X16S, avx2vnni::q3_k_x16s_vec_dot, avx2vnni::q3_k_x16s_gemm);
    set_kernels(DType::Q2_K_X16, avx2vnni::q2_k_x16_vec_dot, avx2vnni::q2_k_x16_gemm);
  }
  if (isa < KernelIsa::avx512_vnni) return t;
  t[index_of(DType::Q8_0_X16A)].from_float = avx512::q8_0_x16a_from_float;
  t[index_of(DType::Q8_0_X16AT)].from_float = avx512::q8_0_x16at_from_float;
  t[index_of(DType::Q8_K_X16A)].from_float = avx512::q8_k_x16a_from_float;
  t[index_of(DType::F32)].vec_dot = avx512::f32_vec_dot;
  t[index_of(DType::F32)].gemm = avx512::f32_gemm;
  t[index_of(DType::F16)].vec_dot = avx512::f16_vec_dot;
  t[index_of(DType::F16)].gemm = avx512::f16_gemm;
  t[index_of(DType::BF16)].vec_dot = avx512::bf16_vec_dot;
  t[index_of(DType::BF16)].gemm = avx512::bf16_gemm;
  t[index_of(DType::Q8_0)].vec_dot = avx512::q8_0_vec_dot;
  t[index_of(DType::Q8_0)].gemm = avx512::q8_0_gemm;
  t[index_of(DType::Q4_0)].vec_dot = avx512::q4_0_vec_dot;
  t[index_of(DType::Q4_0)].gemm = avx512::q4_0_gemm;
  t[index_of(DType::Q4_0_X16)].vec_dot = avx512::q4_0_x16_vec_dot;
  t[index_of(DType::Q4_0_X16)].gemm = avx512::q4_0_x16_gemm;
  t[index_of(DType::Q8_0_X16)].vec_dot = avx512::q8_0_x16_vec_dot;
  t[index_of(DType::Q8_0_X16)].gemm = avx512::q8_0_x16_gemm;
  t[index_of(DType::Q4_K)].vec_dot = avx512::q4_k_vec_dot;
  t[index_of(DType::Q4_K)].gemm = avx512::q4_k_gemm;
  t[index_of(DType::Q6_K)].vec_dot = avx512::q6_k_vec_dot;
  t[index_of(DType::Q6_K)].gemm = avx512::q6_k_gemm;
  t[index_of(DType::Q6_K_X16)].vec_dot = avx512::q6_k_x16_vec_dot;
  t[index_of(DType::Q6_K_X16)].gemm = avx512::q6_k_x16_gemm;
  set_kernels(DType::Q4_K_X16, avx512::q4_k_x16_vec_dot, avx512::q4_k_x16_gemm);
  set_kernels(DType::Q5_K_X16, avx512::q5_k_x16_vec_dot, avx512::q5_k_x16_gemm);
  set_kernels(DType::IQ4_XS_X16, avx512::iq4_xs_x16_vec_dot, avx512::iq4_xs_x16_gemm);
  set_kernels(DType::Q3_K_X16, avx512::q3_k_x16_vec_dot, avx512::q3_k_x16_gemm);
  set_kernels(DType::Q2_K_X16, avx512::q2_k_x16_vec_dot, avx512::q2_k_x16_gemm);
  set_kernels(DType::Q4_1_X16, avx512::q4_1_x16_vec_dot, avx512::q4_1_x16_gemm);
  set_kernels(DType::Q5_0_X16, avx512::q5_0_x16_vec_dot, avx512::q5_0_x16_gemm);
  set_kernels(DType::Q5_1_X16, avx512::q5_1_x16_vec_dot, avx512::q5_1_x16_gemm);
  set_kernels(DType::IQ4_NL_X16, avx512::iq4_nl_x16_vec_dot, avx512::iq4_nl_x16_gemm);
  set_kernels(DType::Q4_K_X16P, avx512::q4_k_x16p_vec_dot, avx512::q4_k_x16p_gemm);
  set_kernels(DType::Q5_K_X16P, avx512::q5_k_x16p_vec_dot, avx512::q5_k_x16p_gemm);
  set_kernels(DType::IQ4_XS_X16P, avx512::iq4_xs_x16p_vec_dot, avx512::iq4_xs_x16p_gemm);
  set_kernels(DType::Q4_1, avx512::q4_1_vec_dot, avx512::q4_1_gemm);
  set_kernels(DType::Q5_0, avx512::q5_0_vec_dot, avx512::q5_0_gemm);
  set_kernels(DType::Q5_1, avx512::q5_1_vec_dot, avx512::q5_1_gemm);
  set_kernels(DType::IQ4_NL, avx512::iq4_nl_vec_dot, avx512::iq4_nl_gemm);
  set_kernels(DType::Q2_K, avx512::q2_k_vec_dot, avx512::q2_k_gemm);
  set_kernels(DType::Q3_K, avx512::q3_k_vec_dot, avx512::q3_k_gemm);
  set_kernels(DType::Q5_K, avx512::q5_k_vec_dot, avx512::q5_k_gemm);
  set_kernels(DType::IQ4_XS, avx512::iq4_xs_vec_dot, avx512::iq4_xs_gemm);
  if (amx == AmxGemms::none) return t;
  const bool hw = amx == AmxGemms::hardware;
  // The AMX GEMMs read A tiles from Q8_0_X16AT rows; the VNNI kernels (vec_dot, and the
  // gemms below 32 tokens) read the Q8_0_X16A groups that start them.
  auto set_amx = [&](DType type, GemmFn hardware, GemmFn emulated) {
    t[index_of(type)].gemm = hw ? hardware : emulated;
    t[index_of(type)].vec_dot_type = DType::Q8_0_X16AT;
  };
  set_amx(DType::Q4_0_X16, avx512::q4_0_x16_gemm_amx, avx512::q4_0_x16_gemm_amx_emulated);
  set_amx(DType::Q8_0_X16, avx512::q8_0_x16_gemm_amx, avx512::q8_0_x16_gemm_amx_emulated);
  set_amx(DType::Q4_1_X16, avx512::q4_1_x16_gemm_amx, avx512::q4_1_x16_gemm_amx_emulated);
  set_amx(DType::Q5_0_X16, avx512::q5_0_x16_gemm_amx, avx512::q5_0_x16_gemm_amx_emulated);
  set_amx(DType::Q5_1_X16, avx512::q5_1_x16_gemm_amx, avx512::q5_1_x16_gemm_amx_emulated);
  set_amx(DType::IQ4_NL_X16, avx512::iq4_nl_x16_gemm_amx, avx512::iq4_nl_x16_gemm_amx_emulated);
  set_amx(DType::Q4_K_X16P, avx512::q4_k_x16p_gemm_amx, avx512::q4_k_x16p_gemm_amx_emulated);
  set_amx(DType::Q5_K_X16P, avx512::q5_k_x16p_gemm_amx, avx512::q5_k_x16p_gemm_amx_emulated);
  set_amx(DType::IQ4_XS_X16P, avx512::iq4_xs_x16p_gemm_amx, avx512::iq4_xs_x16p_gemm_amx_emulated);
  // The lane-scaled K layouts' AMX GEMMs read the Q8_K_X16A rows their VNNI kernels read.
  auto set_amx_lanes = [&](DType type, GemmFn hardware, GemmFn emulated) {
    t[index_of(type)].gemm = hw ? hardware : emulated;
  };
  set_amx_lanes(DType::Q3_K_X16, avx512::q3_k_x16_gemm_amx, avx512::q3_k_x16_gemm_amx_emulated);
  set_amx_lanes(DType::Q6_K_X16, avx512::q6_k_x16_gemm_amx, avx512::q6_k_x16_gemm_amx_emulated);
  return t;
}

const TypeTraits& lookup(const Table& table, DType t) {
  const size_t i = index_of(t);
  if (i >= table.size() || table[i].to_float == nullptr) {
    const auto info = find_dtype_info(t);
    throw Error("kernels: no kernels for tensor type " +
                (info ? std::string(info->name) : "id " + std::to_string(i)));
  }
  return table[i];
}

// The CPU has AMX-TILE and AMX-INT8, the OS enables their state (XCR0 bits 17 and 18), and
// Linux grants it to this process (needed once per process since Linux 5.16; the tile data
// is 8 KiB of extra state per thread).
bool cpu_grants_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool amx_tile = (edx >> 24) & 1, amx_int8 = (edx >> 25) & 1;
  if (!amx_tile || !amx_int8) return false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || ((ecx >> 27) & 1) == 0)
    return false;  // OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if (((xcr0_lo >> 17) & 3) != 3) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::scalar:
      return "scalar";
    case KernelIsa::avx2:
      return "avx2+fma";
    case KernelIsa::avx512_vnni:
      return "avx512-vnni";
  }
  return "?";
}

CpuKernelLevels detect_cpu_kernels(const IsaOverrides& overrides) {
  // (__builtin_cpu_supports also checks that the OS saves the AVX/AVX-512 registers.)
  __builtin_cpu_init();
  CpuKernelLevels l;
  if (overrides.no_avx2 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    return l;
  }
  l.isa = KernelIsa::avx2;
  l.avx_vnni = !overrides.no_avx_vnni && __builtin_cpu_supports("avxvnni");
  if (overrides.no_avx512 || !__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vnni")) {
    return l;
  }
  l.isa = KernelIsa::avx512_vnni;
  l.avx512_bf16 = !overrides.no_avx512_bf16 && __builtin_cpu_supports("avx512bf16");
  l.amx_int8 = !overrides.no_amx && cpu_grants_amx_int8();
  return l;
}

namespace {

struct ProcessLevels {
  IsaOverrides overrides;
  CpuKernelLevels levels;
};

// The levels of this process: a process-wide value set once at start-up (init_cpu_kernels,
// or the first query), a constant after that; the kernel tables below are built from it.
std::atomic<const ProcessLevels*> g_levels{nullptr};

const ProcessLevels& fix_levels(const IsaOverrides& overrides) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (g_levels.load(std::memory_order_relaxed) == nullptr) {
    static const ProcessLevels fixed{overrides, detect_cpu_kernels(overrides)};
    g_levels.store(&fixed, std::memory_order_release);
  }
  return *g_levels.load(std::memory_order_relaxed);
}

const CpuKernelLevels& process_levels() {
  const ProcessLevels* p = g_levels.load(std::memory_order_acquire);
  return (p != nullptr ? *p : fix_levels({})).levels;
}

}  // namespace

void init_cpu_kernels(const IsaOverrides& overrides) {
  if (!(fix_levels(overrides).overrides == overrides)) {
    throw Error(
        "kernels: init_cpu_kernels: the kernel level was fixed already (call it at the start of "
        "main, before any kernel runs)");
  }
}

KernelIsa cpu_kernel_isa() {
  return process_levels().isa;
}

bool cpu_has_avx2_fma() {
  return cpu_kernel_isa() >= KernelIsa::avx2;
}

bool cpu_has_avx512_bf16() {
  return process_levels().avx512_bf16;
}

bool cpu_has_avx_vnni() {
  return process_levels().avx_vnni;
}

bool cpu_has_amx_int8() {
  return process_levels().amx_int8;
}

std::string cpu_kernels_name() {
  const KernelIsa isa = cpu_kernel_isa();
  std::string name = kernel_isa_name(isa);
  if (isa == KernelIsa::avx2 && cpu_has_avx_vnni()) name += "+avx-vnni";
  if (cpu_has_amx_int8()) name += "+amx";
  return name;
}

const TypeTraits& type_traits_avx_vnni(DType t) {
  if (!cpu_has_avx_vnni()) {
    throw Error("kernels: this CPU (or the ISA overrides) does not allow AVX-VNNI kernels");
  }
  static const Table table = build_fast(KernelIsa::avx2, true);
  return lookup(table, t);
}

const TypeTraits& type_traits_amx(DType t, AmxTiles tiles) {
  if (tiles == AmxTiles::hardware) {
    if (!cpu_has_amx_int8())
      throw Error("kernels: this CPU (or the ISA overrides, or the OS) does not allow AMX kernels");
    static const Table table = build_fast(KernelIsa::avx512_vnni, false, AmxGemms::hardware);
    return lookup(table, t);
  }
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    throw Error(
        "kernels: the emulated AMX GEMMs need the avx512-vnni level, which this CPU (or the ISA "
        "overrides) does not allow");
  }
  static const Table table = build_fast(KernelIsa::avx512_vnni, false, AmxGemms::emulated);
  return lookup(table, t);
}

const TypeTraits& type_traits_for(KernelIsa isa, DType t) {
  if (isa > cpu_kernel_isa()) {
    throw Error(std::string("kernels: this CPU (or the ISA overrides) does not allow ") +
                kernel_isa_name(isa) + " kernels");
  }
  // Building a table only stores function pointers; the check above keeps a level this
  // CPU cannot run from being used.
  static const Table tables[] = {build_fast(KernelIsa::scalar, false),
                                 build_fast(KernelIsa::avx2, false),
                                 build_fast(KernelIsa::avx512_vnni, false)};
  return lookup(tables[static_cast<int>(isa)], t);
}

const TypeTraits& type_traits(DType t) {
  static const Table table = build_fast(cpu_kernel_isa(), cpu_has_avx_vnni(),
                                        cpu_has_amx_int8() ? AmxGemms::hardware : AmxGemms::none);
  return lookup(table, t);
}

const TypeTraits& reference_type_traits(DType t) {
  static const Table table = build_reference();
  return lookup(table, t);
}

int64_t row_bytes(DType t, int64_t n, const char* what) {
  const auto info = find_dtype_info(t);
  if (!info) throw Error(std::string("kernels: unknown tensor type id for ") + what);
  if (n < 0 || n % info->block_size != 0) {
    throw Error(std::string("kernels: ") + what + " = " + std::to_string(n) +
                " is not a multiple of the " + std::string(info->name) + " block size " +
                std::to_string(info->block_size));
  }
  return n / info->block_size * static_cast<int64_t>(info->type_size);
}

}  // namespace strata::kernels
