#include "attention/tile_kernels.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/fp16.h"

#include "kernels/quant/traits.h"

namespace strata::attention {
namespace {

// exp(x) for x <= 0 with x clamped at -80: glibc's expf takes a slow underflow path
// (errno handling) below about -87, which sharp attention heads hit for most keys. The
// clamp changes nothing a softmax can see: exp(-80) ~ 1.8e-35 next to the running
// maximum's exp(0) = 1, and exp(-inf) (the empty start) becomes a factor on zeros.
inline float exp_clamped(float x) { return std::exp(std::max(x, -80.0f)); }

// Element i of a K or V tile as float.
template <class Elem>
inline float elem(const Elem* p, int64_t i) {
  if constexpr (std::is_same_v<Elem, float>) {
    return p[i];
  } else {
    return fp16_to_fp32(p[i]);
  }
}

template <class Elem>
void fold_ref(const FoldTile& f) {
  const int64_t hd = f.head_dim, bs = f.block_size;
  // Key j of the fold's axis: slot j % bs of block j / bs.
  auto key = [&](int64_t j, int64_t d) {
    return elem(static_cast<const Elem*>(f.kt[j / bs]), d * bs + j % bs);
  };
  auto value = [&](int64_t j, int64_t d) {
    return elem(static_cast<const Elem*>(f.v[j / bs]), (j % bs) * hd + d);
  };
  for (int64_t r = 0; r < f.n_q; ++r) {
    const int64_t n = f.row_keys(r);
    const float* q = f.q + r * hd;
    float* p = f.p + r * fold_scratch_row(bs);
    float block_max = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < hd; ++d) dot += q[d] * key(f.j0 + j, d);
      p[j] = dot * f.scale;
      block_max = std::max(block_max, p[j]);
    }
    const float m = std::max(f.max[r], block_max);
    const float c = exp_clamped(f.max[r] - m);
    float s = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      p[j] = exp_clamped(p[j] - m);
      s += p[j];
    }
    f.sum[r] = f.sum[r] * c + s;
    f.max[r] = m;
    float* acc = f.acc + r * hd;
    for (int64_t d = 0; d < hd; ++d) acc[d] *= c;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t d = 0; d < hd; ++d) acc[d] += p[j] * value(f.j0 + j, d);
    }
  }
}

void fold_ref_any(const FoldTile& f) {
  f.f16 ? fold_ref<uint16_t>(f) : fold_ref<float>(f);
}

}  // namespace

const TileKernels& reference_tile_kernels() {
  static const TileKernels k{fold_ref_any, "scalar"};
  return k;
}

const TileKernels& tile_kernels() {
  static const TileKernels k = [] {
    const kernels::KernelIsa isa = kernels::cpu_kernel_isa();
    if (isa >= kernels::KernelIsa::avx512_vnni) return TileKernels{avx512::fold, "avx512"};
    if (isa >= kernels::KernelIsa::avx2) return TileKernels{avx2::fold, "avx2"};
    return reference_tile_kernels();
  }();
  return k;
}

}  // namespace strata::attention
