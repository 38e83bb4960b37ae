// Scale searches shared by the reference quantizers (kquant_quantize.cpp defines the
// affine and symmetric fits, kquant_ext_quantize.cpp the IQ4 ones). Scalar code only.
#pragma once

#include <cstdint>

#include "kernels/quant/blocks.h"

namespace strata::kernels::ref {

struct AffineFit {
  float scale;  // value = scale * q - min, with q in [0, nmax]
  float min;    // >= 0
};

// Weighted least-squares fit of value = scale * q - min (min >= 0, q in [0, nmax]) to
// x[0..n) with weights w, over a small grid of candidate quantization grids.
AffineFit fit_affine(const float* x, const float* w, int n, int nmax);

// Fit of value = scale * q with q in [-nmax, nmax - 1], weighting each element by x^2.
// The scale may be negative; 0 for an all-zero group.
float fit_symmetric(const float* x, int n, int nmax);
// The same with each element's weight x^2 further multiplied by importance[i] (the
// activation mass its input channel sees, from --calib); null means all ones.
float fit_symmetric(const float* x, const float* importance, int n, int nmax);

// Packs 8 6-bit scales and mins into Q4_K's (and Q5_K's) 12 bytes.
void pack_q4_k_scales(const int* ls, const int* lm, uint8_t* scales);

// The super-block parameters of Q4_K (nmax 15) and Q5_K (nmax 31): an affine fit of each
// of the 8 sub-blocks of 32 (weights favour large magnitudes with a floor at the block's
// RMS), the sub-block scales and mins as 6-bit multiples of the fp16 d and dmin.
void fit_q4_k_super_block(const float* x, int nmax, uint16_t& d, uint16_t& dmin, uint8_t* scales);

// The scale d of value = d * kIQ4NLValues[q] that best fits x[0..n) (weights x^2 plus a
// floor at the group's mean square); 0 for an all-zero group. May be negative.
float fit_iq4_scale(const float* x, int n);
// The same with each weight multiplied by importance[i]; null means all ones.
float fit_iq4_scale(const float* x, const float* importance, int n);

// For each element the index of the level nearest to x[i] / d (0 when d is 0).
void quantize_iq4_levels(const float* x, int n, float d, uint8_t* q);

// One block of the plain quantizers (q2_k/q3_k/iq4_xs/iq4_nl_from_float) with each
// element's fit weight multiplied by importance[i] (the --calib activation mass of its
// column, convert/weighted_kquant.cpp); null gives the plain quantizer's bytes. The
// sub-block scales are fitted with the importance, their quantization to the format's
// bits is not.
void quantize_q2_k_block(const float* x, const float* importance, BlockQ2_K& block);
void quantize_q3_k_block(const float* x, const float* importance, BlockQ3_K& block);
void quantize_iq4_xs_block(const float* x, const float* importance, BlockIQ4_XS& block);
void quantize_iq4_nl_block(const float* x, const float* importance, BlockIQ4_NL& block);

}  // namespace strata::kernels::ref
