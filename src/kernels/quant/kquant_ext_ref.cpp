// Scalar reference kernels for the other 256-element super-block types of GGUF files:
// Q2_K, Q3_K, Q5_K and IQ4_XS (layouts in blocks.h), against Q8_K activations. Each
// block is first unpacked into integer quants and per-sub-block integer scales (and
// mins), so the dot product of a block is an exact integer sum times the float scales.
// Dequantization multiplies in ggml's order (sub-block scale first, then the quant), which
// is what makes to_float bit-exact with the format definition.
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"

namespace strata::kernels::ref {
namespace {

// Q2_K quants in element order, in [0, 3].
void unpack_q2_k(const BlockQ2_K& block, uint8_t* q) {
  for (int i = 0; i < kQK_K; ++i) {
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    q[i] = (block.qs[32 * h + l] >> (2 * j)) & 3;
  }
}

// Q3_K quants in element order, in [-4, 3].
void unpack_q3_k(const BlockQ3_K& block, int8_t* q) {
  for (int i = 0; i < kQK_K; ++i) {
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    const int low = (block.qs[32 * h + l] >> (2 * j)) & 3;
    const int high = (block.hmask[i % 32] >> (i / 32)) & 1;
    q[i] = static_cast<int8_t>(low + 4 * high - 4);
  }
}

// Q5_K quants in element order, in [0, 31].
void unpack_q5_k(const BlockQ5_K& block, uint8_t* q) {
  for (int k = 0; k < kQK_K / 64; ++k) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = block.qs[32 * k + l];
      q[64 * k + l] = static_cast<uint8_t>((byte & 0x0f) | (((block.qh[l] >> (2 * k)) & 1) << 4));
      q[64 * k + 32 + l] =
          static_cast<uint8_t>((byte >> 4) | (((block.qh[l] >> (2 * k + 1)) & 1) << 4));
    }
  }
}

// IQ4_XS levels (kIQ4NLValues entries) in element order.
void unpack_iq4_xs(const BlockIQ4_XS& block, int8_t* v) {
  for (int j = 0; j < kQK_K / 32; ++j) {
    for (int l = 0; l < 16; ++l) {
      const uint8_t byte = block.qs[16 * j + l];
      v[32 * j + l] = kIQ4NLValues[byte & 0x0f];
      v[32 * j + 16 + l] = kIQ4NLValues[byte >> 4];
    }
  }
}

}  // namespace

int q3_k_scale(const uint8_t* scales, int s) {
  const int low = s < 8 ? scales[s] & 0x0f : scales[s - 8] >> 4;
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return low | (high << 4);
}

int iq4_xs_scale(uint16_t scales_h, const uint8_t* scales_l, int j) {
  const int low = (scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
  const int high = (scales_h >> (2 * j)) & 3;
  return low | (high << 4);
}

void q2_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2_K*>(src);
  uint8_t q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ2_K& block = blocks[b];
    const float d = fp16_to_fp32(block.d), dmin = fp16_to_fp32(block.dmin);
    unpack_q2_k(block, q);
    for (int s = 0; s < 16; ++s) {
      const float scale = d * static_cast<float>(block.scales[s] & 0x0f);
      const float min = dmin * static_cast<float>(block.scales[s] >> 4);
      for (int l = 0; l < 16; ++l) {
        dst[b * kQK_K + 16 * s + l] = scale * static_cast<float>(q[16 * s + l]) - min;
      }
    }
  }
}

float q2_k_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ2_K*>(w);
  const auto* ab = static_cast<const BlockQ8_K*>(a);
  uint8_t q[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_q2_k(wb[b], q);
    int64_t scaled = 0, mins = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 16; ++l) dot += q[16 * s + l] * ab[b].qs[16 * s + l];
      scaled += static_cast<int64_t>(wb[b].scales[s] & 0x0f) * dot;
      mins += static_cast<int64_t>(wb[b].scales[s] >> 4) * ab[b].bsums[s];
    }
    const double d = static_cast<double>(fp16_to_fp32(wb[b].d) * ab[b].d);
    const double dmin = static_cast<double>(fp16_to_fp32(wb[b].dmin) * ab[b].d);
    sum += d * static_cast<double>(scaled) - dmin * static_cast<double>(mins);
  }
  return static_cast<float>(sum);
}

void q3_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ3_K*>(src);
  int8_t q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    unpack_q3_k(blocks[b], q);
    for (int s = 0; s < 16; ++s) {
      const float scale = d * static_cast<float>(q3_k_scale(blocks[b].scales, s) - 32);
      for (int l = 0; l < 16; ++l) {
        dst[b * kQK_K + 16 * s + l] = scale * static_cast<float>(q[16 * s + l]);
      }
    }
  }
}

float q3_k_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ3_K*>(w);
  const auto* ab = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_q3_k(wb[b], q);
    int64_t scaled = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 16; ++l) dot += q[16 * s + l] * ab[b].qs[16 * s + l];
      scaled += static_cast<int64_t>(q3_k_scale(wb[b].scales, s) - 32) * dot;
    }
    sum += static_cast<double>(fp16_to_fp32(wb[b].d) * ab[b].d) * static_cast<double>(scaled);
  }
  return static_cast<float>(sum);
}

void q5_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_K*>(src);
  uint8_t q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ5_K& block = blocks[b];
    const float d = fp16_to_fp32(block.d), dmin = fp16_to_fp32(block.dmin);
    unpack_q5_k(block, q);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(block.scales, j, &sc, &m);
      const float scale = d * static_cast<float>(sc);
      const float min = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        dst[b * kQK_K + 32 * j + l] = scale * static_cast<float>(q[32 * j + l]) - min;
      }
    }
  }
}

float q5_k_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ5_K*>(w);
  const auto* ab = static_cast<const BlockQ8_K*>(a);
  uint8_t q[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_q5_k(wb[b], q);
    int64_t scaled = 0, mins = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(wb[b].scales, j, &sc, &m);
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) dot += q[32 * j + l] * ab[b].qs[32 * j + l];
      scaled += static_cast<int64_t>(sc) * dot;
      mins += static_cast<int64_t>(m) * (ab[b].bsums[2 * j] + ab[b].bsums[2 * j + 1]);
    }
    const double d = static_cast<double>(fp16_to_fp32(wb[b].d) * ab[b].d);
    const double dmin = static_cast<double>(fp16_to_fp32(wb[b].dmin) * ab[b].d);
    sum += d * static_cast<double>(scaled) - dmin * static_cast<double>(mins);
  }
  return static_cast<float>(sum);
}

void iq4_xs_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_XS*>(src);
  int8_t v[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ4_XS& block = blocks[b];
    const float d = fp16_to_fp32(block.d);
    unpack_iq4_xs(block, v);
    for (int j = 0; j < 8; ++j) {
      const float scale =
          d * static_cast<float>(iq4_xs_scale(block.scales_h, block.scales_l, j) - 32);
      for (int l = 0; l < 32; ++l) {
        dst[b * kQK_K + 32 * j + l] = scale * static_cast<float>(v[32 * j + l]);
      }
    }
  }
}

float iq4_xs_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockIQ4_XS*>(w);
  const auto* ab = static_cast<const BlockQ8_K*>(a);
  int8_t v[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_iq4_xs(wb[b], v);
    int64_t scaled = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) dot += v[32 * j + l] * ab[b].qs[32 * j + l];
      scaled += static_cast<int64_t>(iq4_xs_scale(wb[b].scales_h, wb[b].scales_l, j) - 32) * dot;
    }
    sum += static_cast<double>(fp16_to_fp32(wb[b].d) * ab[b].d) * static_cast<double>(scaled);
  }
  return static_cast<float>(sum);
}

}  // namespace strata::kernels::ref
