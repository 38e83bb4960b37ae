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

// Heads go 8 at a time (one AVX2 register on that level), with the sums of 4 slots (scores)
// or 2 dimensions (outputs) held in registers across the loop that feeds them, so each
// loaded query or probability row serves several multiply-adds. Heads past a multiple of
// 8 take the plain loops; either way each sum runs in dimension (scores) or slot
// (outputs) order.
constexpr int64_t kLanes = 8;

void scores(const LatentFoldArgs& a, float* __restrict s) {
  const int64_t H = a.n_heads, bs = a.block_size, H8 = H / kLanes * kLanes;
  const float* __restrict q = a.q_t;
  const float* __restrict tile = a.tile;
  for (int64_t hb = 0; hb < H8; hb += kLanes) {
    int64_t j = 0;
    for (; j + 4 <= a.n_valid; j += 4) {
      float acc[4][kLanes] = {};
      for (int64_t d = 0; d < a.row; ++d) {
        const float* qd = q + d * H + hb;
        const float* td = tile + d * bs + j;
        for (int64_t jj = 0; jj < 4; ++jj)
          for (int64_t l = 0; l < kLanes; ++l) acc[jj][l] += td[jj] * qd[l];
      }
      for (int64_t jj = 0; jj < 4; ++jj)
        for (int64_t l = 0; l < kLanes; ++l) s[(j + jj) * H + hb + l] = acc[jj][l];
    }
    for (; j < a.n_valid; ++j) {
      float acc[kLanes] = {};
      for (int64_t d = 0; d < a.row; ++d)
        for (int64_t l = 0; l < kLanes; ++l) acc[l] += tile[d * bs + j] * q[d * H + hb + l];
      for (int64_t l = 0; l < kLanes; ++l) s[j * H + hb + l] = acc[l];
    }
  }
  for (int64_t h = H8; h < H; ++h) {
    for (int64_t j = 0; j < a.n_valid; ++j) {
      float acc = 0.0f;
      for (int64_t d = 0; d < a.row; ++d) acc += tile[d * bs + j] * q[d * H + h];
      s[j * H + h] = acc;
    }
  }
}

void accumulate_values(const LatentFoldArgs& a, const float* __restrict p) {
  const int64_t H = a.n_heads, bs = a.block_size, H8 = H / kLanes * kLanes;
  const float* __restrict tile = a.tile;
  float* __restrict o = a.o_t;
  for (int64_t d = 0; d < a.kv_lora_rank; ++d) {
    const float* td = tile + d * bs;
    float* od = o + d * H;
    for (int64_t hb = 0; hb < H8; hb += kLanes) {
      float acc[kLanes];
      for (int64_t l = 0; l < kLanes; ++l) acc[l] = od[hb + l];
      for (int64_t j = 0; j < a.n_valid; ++j)
        for (int64_t l = 0; l < kLanes; ++l) acc[l] += p[j * H + hb + l] * td[j];
      for (int64_t l = 0; l < kLanes; ++l) od[hb + l] = acc[l];
    }
    for (int64_t h = H8; h < H; ++h) {
      float acc = od[h];
      for (int64_t j = 0; j < a.n_valid; ++j) acc += p[j * H + h] * td[j];
      od[h] = acc;
    }
  }
}

void fold(const LatentFoldArgs& a) {
  const int64_t H = a.n_heads;
  float* __restrict s = a.scores;
  scores(a, s);
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
  accumulate_values(a, s);
}

}  // namespace strata::attention::LATENT_NS
