// The latent attention block fold (latent_attention.h), included once per ISA level
// inside that level's namespace: plain loops whose innermost runs over the heads, which
// share every cached row, so the compiler vectorises them without reordering a sum
// (each head's score and output are sums in slot and dimension order on every level;
// the levels differ only by FMA contraction).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/latent_attention.h"

namespace strata::attention::LATENT_NS {

void fold(const LatentFoldArgs& a) {
  const int64_t H = a.n_heads, bs = a.block_size;
  float* __restrict s = a.scores;
  const float* __restrict q = a.q_t;
  const float* __restrict tile = a.tile;
  std::fill(s, s + a.n_valid * H, 0.0f);
  for (int64_t d = 0; d < a.row; ++d) {
    const float* qd = q + d * H;
    for (int64_t j = 0; j < a.n_valid; ++j) {
      const float t = tile[d * bs + j];
      float* sj = s + j * H;
      for (int64_t h = 0; h < H; ++h) sj[h] += t * qd[h];
    }
  }
  // Online softmax: rescale each head's running sums to the new maximum.
  float* __restrict m = a.m;
  float* __restrict l = a.l;
  float* __restrict o = a.o_t;
  float rescale[512];  // n_heads <= 512 (checked by latent_attention)
  for (int64_t h = 0; h < H; ++h) {
    float block_max = s[h];
    for (int64_t j = 1; j < a.n_valid; ++j) block_max = std::max(block_max, s[j * H + h]);
    const float new_m = std::max(m[h], block_max);
    rescale[h] = m[h] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m[h] - new_m);
    m[h] = new_m;
    l[h] *= rescale[h];
  }
  for (int64_t d = 0; d < a.kv_lora_rank; ++d) {
    float* od = o + d * H;
    for (int64_t h = 0; h < H; ++h) od[h] *= rescale[h];
  }
  for (int64_t j = 0; j < a.n_valid; ++j) {
    float* sj = s + j * H;
    for (int64_t h = 0; h < H; ++h) {
      sj[h] = std::exp(sj[h] - m[h]);
      l[h] += sj[h];
    }
  }
  for (int64_t d = 0; d < a.kv_lora_rank; ++d) {
    float* od = o + d * H;
    for (int64_t j = 0; j < a.n_valid; ++j) {
      const float t = tile[d * bs + j];
      const float* pj = s + j * H;
      for (int64_t h = 0; h < H; ++h) od[h] += pj[h] * t;
    }
  }
}

}  // namespace strata::attention::LATENT_NS
