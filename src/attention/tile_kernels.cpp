#include "attention/tile_kernels.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"
#include "kv/tile_layout.h"

namespace strata::attention {
namespace {

// exp(x) for x <= 0 with x clamped at -80: glibc's expf takes a slow underflow path
// (errno handling) below about -87, which sharp attention heads hit for most keys. The
// clamp changes nothing a softmax can see: exp(-80) ~ 1.8e-35 next to the running
// maximum's exp(0) = 1, and exp(-inf) (the empty start) becomes a factor on zeros.
inline float exp_clamped(float x) {
  return std::exp(std::max(x, -80.0f));
}

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
    return elem(static_cast<const Elem*>(f.kt[j / bs]), kv_layout::key_index(d, j % bs, bs));
  };
  auto value = [&](int64_t j, int64_t d) {
    return elem(static_cast<const Elem*>(f.v[j / bs]), kv_layout::value_index(j % bs, d, hd));
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

inline float round_bf16(float x) {
  return bf16_to_fp32(fp32_to_bf16(x));
}

// bf16 tiles: the two-term bf16 dot product's arithmetic (see TileKernels::fold). Every
// product of two bf16 values is exact in float, so `acc += a * b` rounds once, as the
// instruction's steps do.
float bf16_key_dot(const FoldTile& f, int64_t r, int64_t j) {
  const int64_t hd = f.head_dim, bs = f.block_size;
  auto key = [&](int64_t d) {
    return bf16_to_fp32(
        static_cast<const uint16_t*>(f.kt[j / bs])[kv_layout::bf16_key_index(d, j % bs, bs)]);
  };
  const float* q = f.q + r * hd;
  float dot = 0.0f;
  for (int64_t d = 0; d < hd; d += 2) {
    dot += round_bf16(q[d + 1]) * key(d + 1);
    dot += round_bf16(q[d]) * key(d);
  }
  return dot;
}

// q8_keys / q4_keys tiles: per group, the exact integer dot product of the quantized query
// row and key j, times (query scale x key scale) rounded once, added by fma in group order.
template <DType T>
float quant_key_dot(const FoldTile& f, int64_t r, int64_t j) {
  const int64_t hd = f.head_dim, bs = f.block_size, slot = j % bs;
  const int64_t group = kv_quant::group_size(hd), n_groups = hd / group;
  const auto* tile = static_cast<const uint8_t*>(f.kt[j / bs]);
  const auto* ks = reinterpret_cast<const uint16_t*>(tile + kv_quant::scale_offset(T, bs, hd));
  auto key = [&](int64_t d) -> int32_t {
    const int64_t at = kv_layout::quad_key_index(d, slot, bs);
    if constexpr (T == DType::Q4_0) return kv_quant::get_nibble(tile, at) - 8;
    return reinterpret_cast<const int8_t*>(tile)[at];
  };
  const int8_t* q = f.q8.q + r * hd;
  float s = 0.0f;
  for (int64_t g = 0; g < n_groups; ++g) {
    int32_t dot = 0;
    for (int64_t d = g * group; d < (g + 1) * group; ++d) dot += int32_t{q[d]} * key(d);
    const float w = f.q8.scale[r * n_groups + g] * fp16_to_fp32(ks[g * bs + slot]);
    s = std::fma(static_cast<float>(dot), w, s);
  }
  return s;
}

// Scores by key_dot(f, row, key) (the key's index on the fold's axis), then the bf16
// fold's softmax and values.
template <float (*key_dot)(const FoldTile&, int64_t, int64_t)>
void fold_ref_bf16(const FoldTile& f) {
  const int64_t hd = f.head_dim, bs = f.block_size;
  auto value = [&](int64_t j, int64_t d) {
    return bf16_to_fp32(
        static_cast<const uint16_t*>(f.v[j / bs])[kv_layout::bf16_value_index(j % bs, d, hd)]);
  };
  for (int64_t r = 0; r < f.n_q; ++r) {
    const int64_t n = f.row_keys(r);
    float* p = f.p + r * fold_scratch_row(bs);
    float block_max = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      p[j] = key_dot(f, r, f.j0 + j) * f.scale;
      block_max = std::max(block_max, p[j]);
    }
    const float m = std::max(f.max[r], block_max);
    const float c = exp_clamped(f.max[r] - m);
    float s = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      p[j] = round_bf16(exp_clamped(p[j] - m));
      s += p[j];
    }
    f.sum[r] = f.sum[r] * c + s;
    f.max[r] = m;
    float* acc = f.acc + r * hd;
    for (int64_t d = 0; d < hd; ++d) acc[d] *= c;
    // Slots 2m and 2m + 1 of a block form a pair when the row folds both; a key whose
    // partner lies outside the row's keys is added alone.
    for (int64_t j = 0; j < n;) {
      const int64_t slot = (f.j0 + j) % bs;
      if (slot % 2 == 0 && j + 1 < n) {
        for (int64_t d = 0; d < hd; ++d) {
          acc[d] += p[j + 1] * value(f.j0 + j + 1, d);
          acc[d] += p[j] * value(f.j0 + j, d);
        }
        j += 2;
      } else {
        for (int64_t d = 0; d < hd; ++d) acc[d] += p[j] * value(f.j0 + j, d);
        j += 1;
      }
    }
  }
}

void fold_ref_any(const FoldTile& f) {
  switch (f.elem) {
    case TileElem::f32:
      return fold_ref<float>(f);
    case TileElem::f16:
      return fold_ref<uint16_t>(f);
    case TileElem::bf16:
      return fold_ref_bf16<bf16_key_dot>(f);
    case TileElem::q8_keys:
      return fold_ref_bf16<quant_key_dot<DType::Q8_0>>(f);
    case TileElem::q4_keys:
      return fold_ref_bf16<quant_key_dot<DType::Q4_0>>(f);
  }
}

}  // namespace

void quantize_query_q8(const float* x, int64_t n_rows, int64_t head_dim, int8_t* q, float* scale,
                       int32_t* sum) {
  const int64_t group = kv_quant::group_size(head_dim), n_groups = head_dim / group;
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t g = 0; g < n_groups; ++g) {
      const int64_t at = r * head_dim + g * group;
      // Comparisons rather than std::fmax / fmin (library calls here): a NaN compares false.
      float amax = 0.0f;
      for (int64_t i = 0; i < group; ++i) {
        const float a = std::fabs(x[at + i]);
        amax = a > amax ? a : amax;
      }
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      int32_t total = 0;
      for (int64_t i = 0; i < group; ++i) {
        float y = x[at + i] * inv;
        y = y > 127.0f ? 127.0f : y < -127.0f ? -127.0f : y == y ? y : 0.0f;
        // To the nearest integer, ties to even (the default rounding of this add).
        const float rounded = (y + 0x1.8p23f) - 0x1.8p23f;
        q[at + i] = static_cast<int8_t>(rounded);
        total += static_cast<int32_t>(rounded);
      }
      scale[r * n_groups + g] = amax / 127.0f;
      sum[r * n_groups + g] = total;
    }
  }
}

const TileKernels& reference_tile_kernels() {
  static const TileKernels k{fold_ref_any, "scalar"};
  return k;
}

const TileKernels& tile_kernels() {
  static const TileKernels k = [] {
    const kernels::KernelIsa isa = kernels::cpu_kernel_isa();
    if (kernels::cpu_has_avx512_bf16()) return TileKernels{avx512bf16::fold, "avx512-bf16", 8};
    if (isa >= kernels::KernelIsa::avx512_vnni) return TileKernels{avx512::fold, "avx512", 8};
    if (isa >= kernels::KernelIsa::avx2) return TileKernels{avx2::fold, "avx2"};
    return reference_tile_kernels();
  }();
  return k;
}

}  // namespace strata::attention
