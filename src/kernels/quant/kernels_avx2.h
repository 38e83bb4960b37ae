// AVX2+FMA+F16C kernels (internal to kernels/). Defined in *_avx2.cpp files, which are the
// only ones compiled with those instruction sets; call them only when cpu_has_avx2_fma().
#pragma once

#include <cstdint>

namespace strata::kernels::avx2 {

void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
float f32_vec_dot(int64_t n, const void* w, const void* a);
float f16_vec_dot(int64_t n, const void* w, const void* a);
float bf16_vec_dot(int64_t n, const void* w, const void* a);
void f32_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void f16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void bf16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

void q8_0_from_float(const float* src, void* dst, int64_t n);
float q8_0_vec_dot(int64_t n, const void* w, const void* a);
float q4_0_vec_dot(int64_t n, const void* w, const void* a);
// Q4_1, Q5_0, Q5_1 and IQ4_NL against Q8_0 activations, the same micro-kernel.
float q4_1_vec_dot(int64_t n, const void* w, const void* a);
float q5_0_vec_dot(int64_t n, const void* w, const void* a);
float q5_1_vec_dot(int64_t n, const void* w, const void* a);
float iq4_nl_vec_dot(int64_t n, const void* w, const void* a);
void q4_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_nl_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Tiles of the same micro-kernel as the vec_dots above (see TypeTraits::gemm).
void q8_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q4_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

void q8_k_from_float(const float* src, void* dst, int64_t n);
float q4_k_vec_dot(int64_t n, const void* w, const void* a);
float q6_k_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q6_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q2_K, Q3_K, Q5_K and IQ4_XS against Q8_K activations (kquant_ext_avx2.cpp), the Q4_K
// reduction order: one exact int32 per super-block, then fmas in block order.
float q2_k_vec_dot(int64_t n, const void* w, const void* a);
float q3_k_vec_dot(int64_t n, const void* w, const void* a);
float q5_k_vec_dot(int64_t n, const void* w, const void* a);
float iq4_xs_vec_dot(int64_t n, const void* w, const void* a);
void q2_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q3_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_xs_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy);

}  // namespace strata::kernels::avx2

// The repacked layouts' kernels, NAME_vec_dot and NAME_gemm (TypeTraits' signatures), each
// bit-identical to ref::NAME_vec_dot and to the AVX-512 kernel:
//   q4_0_x16, q8_0_x16                          interleaved_avx2.cpp, Q8_0_X16A activations
//   q4_1_x16 ... iq4_nl_x16, the K pairs (x16p)  legacy_x16_avx2.cpp, Q8_0_X16A
//   q6_k_x16                                    kquant_x16_avx2.cpp, Q8_K_X16A
//   q4_k_x16, q5_k_x16, iq4_xs_x16, q3_k_x16(s), q2_k_x16   kquant_*_x16_avx2.cpp, Q8_K_X16A
// declared in avx2 and again in avx2vnni: the same sources compiled with AVX-VNNI
// (*_avxvnni.cpp: vpdpbusd on 256-bit vectors, Intel's cores since Alder Lake without
// AVX-512), the same outputs bit for bit; call those only when cpu_has_avx_vnni().
#define STRATA_AVX2_ROW_KERNELS(name)                                                     \
  float name##_vec_dot(int64_t n, const void* w, const void* a);                          \
  void name##_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a, \
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
#define STRATA_AVX2_REPACKED_KERNELS   \
  STRATA_AVX2_ROW_KERNELS(q4_0_x16)    \
  STRATA_AVX2_ROW_KERNELS(q8_0_x16)    \
  STRATA_AVX2_ROW_KERNELS(q4_1_x16)    \
  STRATA_AVX2_ROW_KERNELS(q5_0_x16)    \
  STRATA_AVX2_ROW_KERNELS(q5_1_x16)    \
  STRATA_AVX2_ROW_KERNELS(iq4_nl_x16)  \
  STRATA_AVX2_ROW_KERNELS(q4_k_x16p)   \
  STRATA_AVX2_ROW_KERNELS(q5_k_x16p)   \
  STRATA_AVX2_ROW_KERNELS(iq4_xs_x16p) \
  STRATA_AVX2_ROW_KERNELS(q6_k_x16)    \
  STRATA_AVX2_ROW_KERNELS(q4_k_x16)    \
  STRATA_AVX2_ROW_KERNELS(q5_k_x16)    \
  STRATA_AVX2_ROW_KERNELS(iq4_xs_x16)  \
  STRATA_AVX2_ROW_KERNELS(q3_k_x16)    \
  STRATA_AVX2_ROW_KERNELS(q3_k_x16s)   \
  STRATA_AVX2_ROW_KERNELS(q2_k_x16)

namespace strata::kernels::avx2 {
STRATA_AVX2_REPACKED_KERNELS
}  // namespace strata::kernels::avx2

namespace strata::kernels::avx2vnni {
STRATA_AVX2_REPACKED_KERNELS
}  // namespace strata::kernels::avx2vnni

#undef STRATA_AVX2_REPACKED_KERNELS
#undef STRATA_AVX2_ROW_KERNELS
