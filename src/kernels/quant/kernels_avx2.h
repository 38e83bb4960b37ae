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

// Q6_K_X16 weights against Q8_K_X16A activations (kquant_x16_avx2.cpp); bit-identical to
// ref::q6_k_x16_vec_dot and the AVX-512 kernel.
// Q4_K_X16 weights against Q8_K_X16A activations (kquant_q4_x16_avx2.cpp); bit-identical
// to ref::q4_k_x16_vec_dot and the AVX-512 kernel.
float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q5_K_X16 likewise (kquant_q5_x16_avx2.cpp).
float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// IQ4_XS_X16 weights against Q8_K_X16A activations (kquant_iq4_x16_avx2.cpp); bit-identical to
// ref::iq4_xs_x16_vec_dot.
float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a);
void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q3_K_X16 weights against Q8_K_X16A activations (kquant_q3_x16_avx2.cpp); bit-identical to
// ref::q3_k_x16_vec_dot.
float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q3_K_X16S likewise (the layout AVX2 machines repack Q3_K to); bit-identical to
// ref::q3_k_x16s_vec_dot.
float q3_k_x16s_vec_dot(int64_t n, const void* w, const void* a);
void q3_k_x16s_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q4_1_X16, Q5_0_X16, Q5_1_X16 and IQ4_NL_X16 weights against Q8_0_X16A activations
// (legacy_x16_avx2.cpp); bit-identical to ref::q4_1_x16_vec_dot ... iq4_nl_x16_vec_dot.
float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a);
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a);
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_nl_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// The K pairs Q4_K_X16P, Q5_K_X16P and IQ4_XS_X16P against Q8_0_X16A activations
// (legacy_x16_avx2.cpp); bit-identical to ref::q4_k_x16p_vec_dot ... iq4_xs_x16p_vec_dot.
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_xs_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q2_K_X16 weights against Q8_K_X16A activations (kquant_q2_x16_avx2.cpp); bit-identical to
// ref::q2_k_x16_vec_dot.
float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q2_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q4_0_X16 / Q8_0_X16 weights against Q8_0_X16A activations (interleaved_avx2.cpp),
// bit-identical to ref::q4_0_x16_vec_dot / q8_0_x16_vec_dot (and the AVX-512 kernels).
float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
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

// The repacked layouts' kernels (interleaved_avx2.cpp, legacy_x16_avx2.cpp, kquant_*x16_avx2.cpp)
// compiled again with
// AVX-VNNI (*_avxvnni.cpp: vpdpbusd on 256-bit vectors, Intel's cores since Alder Lake
// without AVX-512); the same outputs bit for bit. Call them only when cpu_has_avx_vnni().
namespace strata::kernels::avx2vnni {

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a);
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a);
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a);
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a);
void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q4_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_nl_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q4_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_xs_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// The one-super-block K layouts (kquant_*_x16_avx2.cpp, kquant_x16_avx2.cpp).
float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a);
float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a);
float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a);
float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a);
float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a);
float q3_k_x16s_vec_dot(int64_t n, const void* w, const void* a);
float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q5_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q3_k_x16s_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q2_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);

}  // namespace strata::kernels::avx2vnni
