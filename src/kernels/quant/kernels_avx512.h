// AVX-512 kernels (F, BW, VL, VNNI; internal to kernels/). Defined in *_avx512.cpp files,
// the only ones compiled with those instruction sets; call them only when
// cpu_kernel_isa() is KernelIsa::avx512_vnni.
#pragma once

#include <cstdint>

namespace strata::kernels::avx512 {

// Q8_0 and Q4_0 weights against Q8_0 activations. Every output is bit-identical to the
// AVX2 kernel's (legacy_avx2.cpp), so switching the instruction set never changes results.
float q8_0_vec_dot(int64_t n, const void* w, const void* a);
float q4_0_vec_dot(int64_t n, const void* w, const void* a);
void q8_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q4_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// F32, F16 and BF16 weights against float activations (float_avx512.cpp); bit-identical
// to the AVX2 kernels.
float f32_vec_dot(int64_t n, const void* w, const void* a);
float f16_vec_dot(int64_t n, const void* w, const void* a);
float bf16_vec_dot(int64_t n, const void* w, const void* a);
void f32_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void f16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void bf16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q8_0_X16A, Q8_0_X16AT and Q8_K_X16A activations from floats, the same bytes as
// ref::q8_0_x16a_from_float, ref::q8_0_x16at_from_float and ref::q8_k_x16a_from_float.
void q8_0_x16a_from_float(const float* src, void* dst, int64_t n);
void q8_0_x16at_from_float(const float* src, void* dst, int64_t n);
void q8_k_x16a_from_float(const float* src, void* dst, int64_t n);

// Q4_0_X16 and Q8_0_X16 weights against Q8_0_X16A activations (interleaved_avx512.cpp);
// bit-identical to ref::q4_0_x16_vec_dot / q8_0_x16_vec_dot.
float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a);
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs likewise
// (legacy_x16_avx512.cpp); bit-identical to their ref:: models.
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
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy);
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a);
void iq4_xs_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q2_K_X16 weights against Q8_K_X16A activations (kquant_q2_x16_avx512.cpp); bit-identical to
// ref::q2_k_x16_vec_dot.
float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q2_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q3_K_X16 likewise (kquant_q3_x16_avx512.cpp); bit-identical to ref::q3_k_x16_vec_dot.
float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q4_K_X16 likewise (kquant_q4_x16_avx512.cpp); bit-identical to ref::q4_k_x16_vec_dot.
float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q5_K_X16 likewise (kquant_q5_x16_avx512.cpp).
float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// Q6_K_X16 likewise (kquant_x16_avx512.cpp); bit-identical to ref::q6_k_x16_vec_dot.
float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy);
// IQ4_XS_X16 likewise (kquant_iq4_x16_avx512.cpp); bit-identical to ref::iq4_xs_x16_vec_dot.
float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a);
void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// GEMMs with AMX tiles, bit-identical to the gemms above: name##_gemm_amx (the VNNI gemm
// below 32 tokens; call it only where cpu_has_amx_int8()) and name##_gemm_amx_emulated (the
// tile instructions' scalar model at every token count, for tests on any AVX-512 VNNI CPU).
// Defined beside each layout's gemm. The group layouts (amx_group_gemm.h) read Q8_0_X16AT
// activations, the lane-scaled K layouts (amx_lane_gemm.h) the Q8_K_X16A ones their VNNI
// gemms read.
#define STRATA_AMX_GROUP_GEMMS(X) \
  X(q4_0_x16)                     \
  X(q8_0_x16)                     \
  X(q4_1_x16)                     \
  X(q5_0_x16)                     \
  X(q5_1_x16)                     \
  X(iq4_nl_x16)                   \
  X(q4_k_x16p)                    \
  X(q5_k_x16p)                    \
  X(iq4_xs_x16p)
#define STRATA_AMX_LANE_GEMMS(X) \
  X(q3_k_x16)                    \
  X(q6_k_x16)
#define STRATA_DECLARE_AMX_GEMMS(name)                                                        \
  void name##_gemm_amx(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a, \
                       int64_t a_stride, int64_t nt, float* y, int64_t ldy);                  \
  void name##_gemm_amx_emulated(int64_t n, const void* w, int64_t w_stride, int64_t nr,       \
                                const void* a, int64_t a_stride, int64_t nt, float* y,        \
                                int64_t ldy);
STRATA_AMX_GROUP_GEMMS(STRATA_DECLARE_AMX_GEMMS)
STRATA_AMX_LANE_GEMMS(STRATA_DECLARE_AMX_GEMMS)
#undef STRATA_DECLARE_AMX_GEMMS

// Q4_K and Q6_K weights against Q8_K activations (kquant_avx512.cpp); bit-identical to the
// AVX2 kernels.
float q4_k_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);
float q6_k_vec_dot(int64_t n, const void* w, const void* a);
void q6_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy);

// Q2_K, Q3_K, Q5_K and IQ4_XS weights against Q8_K activations (kquant_ext_avx512.cpp);
// bit-identical to the AVX2 kernels.
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

// Q4_1, Q5_0, Q5_1 and IQ4_NL weights against Q8_0 activations (legacy_avx512.cpp);
// bit-identical to the AVX2 kernels.
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

}  // namespace strata::kernels::avx512
