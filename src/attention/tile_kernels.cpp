#include "attention/tile_kernels.h"

#include <algorithm>
#include <limits>

#include "kernels/quant/traits.h"

namespace strata::attention {
namespace {

float scores_ref(const float* q, const float* k, int64_t n, int64_t head_dim, float scale,
                 float* sc) {
  float block_max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = k + j * head_dim;
    float dot = 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * kj[d];
    sc[j] = dot * scale;
    block_max = std::max(block_max, sc[j]);
  }
  return block_max;
}

void accumulate_ref(const float* p, const float* v, int64_t n, int64_t head_dim,
                    float correction, float* acc) {
  for (int64_t d = 0; d < head_dim; ++d) acc[d] *= correction;
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = v + j * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) acc[d] += p[j] * vj[d];
  }
}

}  // namespace

const TileKernels& reference_tile_kernels() {
  static const TileKernels k{scores_ref, accumulate_ref};
  return k;
}

const TileKernels& tile_kernels() {
  static const TileKernels k = kernels::cpu_has_avx2_fma()
                                   ? TileKernels{avx2::scores, avx2::accumulate}
                                   : reference_tile_kernels();
  return k;
}

}  // namespace strata::attention
