// Importance-weighted scale search for `strata quantize --calib` / `--search` (issue 21,
// part 3). For each 32-element block of Q4_0, Q5_0, Q8_0 (value = d * q) and Q4_1, Q5_1
// (value = d * q + m) it picks the fp16 parameters that minimise the weighted squared
// rounding error  sum_i w_i (x_i - decoded_i)^2,  w_i = importance of column i (the mean
// x_i^2 of the activations that multiply it, convert/imatrix.h), or 1 without one.
//
// Candidates, each evaluated exactly as it decodes (fp16-rounded parameters, levels
// rounded and clamped against them):
//   - the plain quantizer's own parameters (max-abs grid, or min/max for Q4_1/Q5_1), so
//     the search is never worse than it on the weighted error;
//   - symmetric types: grids that put the largest-magnitude element at level
//     -(nmax + 0.1k), k = -10..4, each also refined by weighted least squares
//     (d = sum w x q / sum w q^2);
//   - affine types: kernels::ref::fit_affine's 21 grids with the same weights.
// Outliers (OutlierPolicy): `keep` rejects every candidate that clamps an element (the
// block's largest values stay on the grid, as the plain quantizer keeps them); `clip`
// also tries grids that clip the largest element, up to 1.5x finer (a = nmax * (1 +
// 0.05j), j = 1..10), and takes one when the weighted error says clipping an outlier
// costs less than coarser steps for every other element. Clip is the default.
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS and IQ4_NL (weighted_kquant.cpp): the plain
// quantizers' fits with the importance multiplied into their weights ((rms + |x|) for the
// affine sub-blocks of Q2_K/Q4_K/Q5_K, x^2 for the symmetric ones of Q3_K/Q6_K, x^2 plus
// the mean square for the IQ4 codebook), kept per block only when the weighted error
// beats the plain quantizer's; the outlier policy does not apply to them.
// has_weighted_search() says which types have a search.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace strata {

enum class OutlierPolicy { keep, clip };

// The part in weighted_kquant.cpp (rows a multiple of the type's block: 256, 32 for
// IQ4_NL; dst holds rows x row bytes).
bool is_weighted_kquant(DType type);
void encode_kquant_rows_weighted(const float* src, int64_t rows, int64_t cols, DType type,
                                 const float* importance, uint8_t* dst);

bool has_weighted_search(DType type);

// Encodes `rows` rows of `cols` values (cols a multiple of 32) to `type` with the search
// above; importance: cols weights shared by every row, or null for all ones. Throws Error
// for a type without a search.
std::vector<uint8_t> encode_rows_searched(const float* src, int64_t rows, int64_t cols, DType type,
                                          const float* importance, OutlierPolicy outliers);

// sum over rows and columns of importance[j] * (src - decoded)^2 (importance null = 1),
// for tests and the quantizer's report.
double weighted_sq_error(const float* src, const uint8_t* encoded, int64_t rows, int64_t cols,
                         DType type, const float* importance);

}  // namespace strata
