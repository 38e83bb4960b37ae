// The inner loops of paged attention over one K/V tile (internal to attention/): scores
// q.k_j and the softmax-weighted sum of V rows. The scalar versions are the reference;
// the AVX2+FMA versions (tile_kernels_avx2.cpp) are used when kernels::cpu_has_avx2_fma().
// Both are pure functions with a fixed order, so attention stays batch- and
// thread-invariant whichever set runs.
#pragma once

#include <cstdint>

namespace strata::attention {

struct TileKernels {
  // sc[j] = dot(q, k + j * head_dim) * scale for j in [0, n); returns max_j sc[j].
  float (*scores)(const float* q, const float* k, int64_t n, int64_t head_dim, float scale,
                  float* sc);
  // acc[d] = acc[d] * correction + sum_j p[j] * v[j * head_dim + d], j in order.
  void (*accumulate)(const float* p, const float* v, int64_t n, int64_t head_dim,
                     float correction, float* acc);
};

const TileKernels& reference_tile_kernels();
// AVX2 kernels when the CPU has them (and STRATA_NO_AVX2 is unset), else the reference.
const TileKernels& tile_kernels();

namespace avx2 {
float scores(const float* q, const float* k, int64_t n, int64_t head_dim, float scale, float* sc);
void accumulate(const float* p, const float* v, int64_t n, int64_t head_dim, float correction,
                float* acc);
}  // namespace avx2

}  // namespace strata::attention
