// Scalar reference kernels (internal to kernels/). Each is the plain-C++ definition of a
// format operation; the AVX2 versions in kernels_avx2.h are tested against these.
// Reference dot products accumulate in double, so they are also the accuracy yardstick.
#pragma once

#include <cstdint>

namespace strata::kernels::ref {

// Plain float types. Dot products take float activations.
void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
float f32_vec_dot(int64_t n, const void* w, const void* a);
void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
float f16_vec_dot(int64_t n, const void* w, const void* a);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
float bf16_vec_dot(int64_t n, const void* w, const void* a);

// 32-element blocks; dot products take Q8_0 activations.
void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
float q8_0_vec_dot(int64_t n, const void* w, const void* a);
void q4_0_to_float(const void* src, float* dst, int64_t n);
void q4_0_from_float(const float* src, void* dst, int64_t n);
float q4_0_vec_dot(int64_t n, const void* w, const void* a);
void q4_1_to_float(const void* src, float* dst, int64_t n);
void q4_1_from_float(const float* src, void* dst, int64_t n);
float q4_1_vec_dot(int64_t n, const void* w, const void* a);
void q5_0_to_float(const void* src, float* dst, int64_t n);
void q5_0_from_float(const float* src, void* dst, int64_t n);
float q5_0_vec_dot(int64_t n, const void* w, const void* a);
void q5_1_to_float(const void* src, float* dst, int64_t n);
void q5_1_from_float(const float* src, void* dst, int64_t n);
float q5_1_vec_dot(int64_t n, const void* w, const void* a);
void iq4_nl_to_float(const void* src, float* dst, int64_t n);
void iq4_nl_from_float(const float* src, void* dst, int64_t n);
float iq4_nl_vec_dot(int64_t n, const void* w, const void* a);

// Internal interleaved layouts (blocks.h), 512-element groups: Q4_0_X16 and Q8_0_X16
// weights take Q8_0_X16A activations. Their vec_dots are the AVX-512 kernels' exact
// scalar models.
void q4_0_x16_to_float(const void* src, float* dst, int64_t n);
void q4_0_x16_from_float(const float* src, void* dst, int64_t n);
float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a);
void q8_0_x16_to_float(const void* src, float* dst, int64_t n);
void q8_0_x16_from_float(const float* src, void* dst, int64_t n);
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a);
// Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs (Q4_K_X16P, Q5_K_X16P,
// IQ4_XS_X16P) likewise (legacy_x16_ref.cpp).
void q4_1_x16_to_float(const void* src, float* dst, int64_t n);
void q4_1_x16_from_float(const float* src, void* dst, int64_t n);
float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a);
void q5_0_x16_to_float(const void* src, float* dst, int64_t n);
void q5_0_x16_from_float(const float* src, void* dst, int64_t n);
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a);
void q5_1_x16_to_float(const void* src, float* dst, int64_t n);
void q5_1_x16_from_float(const float* src, void* dst, int64_t n);
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a);
void iq4_nl_x16_to_float(const void* src, float* dst, int64_t n);
void iq4_nl_x16_from_float(const float* src, void* dst, int64_t n);
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a);
void q4_k_x16p_to_float(const void* src, float* dst, int64_t n);
void q4_k_x16p_from_float(const float* src, void* dst, int64_t n);
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_x16p_to_float(const void* src, float* dst, int64_t n);
void q5_k_x16p_from_float(const float* src, void* dst, int64_t n);
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a);
void iq4_xs_x16p_to_float(const void* src, float* dst, int64_t n);
void iq4_xs_x16p_from_float(const float* src, void* dst, int64_t n);
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a);
// Q2_K_X16 weights (kquant_x16_ref.cpp) take Q8_K_X16A activations.
void q2_k_x16_to_float(const void* src, float* dst, int64_t n);
void q2_k_x16_from_float(const float* src, void* dst, int64_t n);
float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q8_0_x16a_to_float(const void* src, float* dst, int64_t n);
void q8_0_x16a_from_float(const float* src, void* dst, int64_t n);
// Q8_0_X16AT (blocks.h): one row of n elements; to_float reads its Q8_0_X16A part.
void q8_0_x16at_from_float(const float* src, void* dst, int64_t n);
// ... and Q6_K_X16 weights (256-element super-blocks) take Q8_K_X16A activations.
void q6_k_x16_to_float(const void* src, float* dst, int64_t n);
void q6_k_x16_from_float(const float* src, void* dst, int64_t n);
float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a);
// Q4_K_X16 weights (kquant_x16_ref.cpp) take Q8_K_X16A activations too.
void q4_k_x16_to_float(const void* src, float* dst, int64_t n);
void q4_k_x16_from_float(const float* src, void* dst, int64_t n);
float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_x16_to_float(const void* src, float* dst, int64_t n);
void q5_k_x16_from_float(const float* src, void* dst, int64_t n);
float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a);
// IQ4_XS_X16 weights (kquant_x16_ref.cpp) take Q8_K_X16A activations too.
void iq4_xs_x16_to_float(const void* src, float* dst, int64_t n);
void iq4_xs_x16_from_float(const float* src, void* dst, int64_t n);
float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a);
// Q3_K_X16 weights (kquant_x16_ref.cpp) take Q8_K_X16A activations too.
void q3_k_x16_to_float(const void* src, float* dst, int64_t n);
void q3_k_x16_from_float(const float* src, void* dst, int64_t n);
float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a);
// Q3_K_X16S likewise (the same model with the sliced bit-2 plane).
void q3_k_x16s_to_float(const void* src, float* dst, int64_t n);
void q3_k_x16s_from_float(const float* src, void* dst, int64_t n);
float q3_k_x16s_vec_dot(int64_t n, const void* w, const void* a);
void q8_k_x16a_to_float(const void* src, float* dst, int64_t n);
void q8_k_x16a_from_float(const float* src, void* dst, int64_t n);

// 256-element super-blocks; dot products take Q8_K activations.
void q8_k_to_float(const void* src, float* dst, int64_t n);
void q8_k_from_float(const float* src, void* dst, int64_t n);
void q4_k_to_float(const void* src, float* dst, int64_t n);
void q4_k_from_float(const float* src, void* dst, int64_t n);
float q4_k_vec_dot(int64_t n, const void* w, const void* a);
void q6_k_to_float(const void* src, float* dst, int64_t n);
void q6_k_from_float(const float* src, void* dst, int64_t n);
float q6_k_vec_dot(int64_t n, const void* w, const void* a);
void q2_k_to_float(const void* src, float* dst, int64_t n);
void q2_k_from_float(const float* src, void* dst, int64_t n);
float q2_k_vec_dot(int64_t n, const void* w, const void* a);
void q3_k_to_float(const void* src, float* dst, int64_t n);
void q3_k_from_float(const float* src, void* dst, int64_t n);
float q3_k_vec_dot(int64_t n, const void* w, const void* a);
void q5_k_to_float(const void* src, float* dst, int64_t n);
void q5_k_from_float(const float* src, void* dst, int64_t n);
float q5_k_vec_dot(int64_t n, const void* w, const void* a);
void iq4_xs_to_float(const void* src, float* dst, int64_t n);
void iq4_xs_from_float(const float* src, void* dst, int64_t n);
float iq4_xs_vec_dot(int64_t n, const void* w, const void* a);

// The 6-bit scale (biased by 32) of sub-block s (0..15) of a Q3_K block, and the 6-bit
// scale of sub-block j (0..7) of an IQ4_XS block, in [0, 63].
int q3_k_scale(const uint8_t* scales, int s);
// Value j (0..15) of a six-bit string: 16 6-bit values in 12 bytes, value j at bits 6j ..
// 6j + 5 read little-endian (Q3_K_X16's scales, the K pairs' scales and mins), and the
// whole string written from its 16 values (each taken mod 64).
int six_bit_value(const uint8_t* string, int j);
void put_six_bit_values(uint8_t* string, const int (&values)[16]);
int iq4_xs_scale(uint16_t scales_h, const uint8_t* scales_l, int j);

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K block.
void q4_k_scale_min(const uint8_t* scales, int j, int* scale, int* min);

}  // namespace strata::kernels::ref
