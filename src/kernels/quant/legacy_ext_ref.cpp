// Scalar reference kernels for the other 32-element block types of GGUF files: Q4_1,
// Q5_0, Q5_1 and IQ4_NL (layouts in blocks.h). Their dot products take Q8_0 activations,
// as Q4_0's do. Q4_1 and Q5_1 also need the sum of each activation block (for the offset
// m); ggml keeps it in a Q8_1 block, here it is summed from the quants, which is exact and
// lets every 32-element type share one activation format.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/quant_fit.h"
#include "kernels/quant/rounding.h"

namespace strata::kernels::ref {
namespace {

constexpr int kHalf = kQK8_0 / 2;

// The 5-bit quants of Q5_0 / Q5_1 in element order, in [0, 31].
void unpack_q5(const uint8_t* qs, const uint8_t* qh_bytes, uint8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int i = 0; i < kHalf; ++i) {
    q[i] = static_cast<uint8_t>((qs[i] & 0x0f) | (((qh >> i) & 1) << 4));
    q[i + kHalf] = static_cast<uint8_t>((qs[i] >> 4) | (((qh >> (i + kHalf)) & 1) << 4));
  }
}

void pack_q5(const uint8_t* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int i = 0; i < kHalf; ++i) {
    qs[i] = static_cast<uint8_t>((q[i] & 0x0f) | ((q[i + kHalf] & 0x0f) << 4));
    qh |= static_cast<uint32_t>(q[i] >> 4) << i;
    qh |= static_cast<uint32_t>(q[i + kHalf] >> 4) << (i + kHalf);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

void unpack_q4(const uint8_t* qs, uint8_t* q) {
  for (int i = 0; i < kHalf; ++i) {
    q[i] = qs[i] & 0x0f;
    q[i + kHalf] = qs[i] >> 4;
  }
}

int32_t activation_sum(const BlockQ8_0& a) {
  int32_t s = 0;
  for (int i = 0; i < kQK8_0; ++i) s += a.qs[i];
  return s;
}

// Min/max affine grid with nmax + 1 levels: value = d * q + m with m the block minimum, so
// the whole range is reachable. d and m are rounded to fp16 first and the elements are
// quantized against the stored values (as the Q8_0/Q4_0 quantizers do).
void quantize_affine(const float* x, int nmax, uint16_t* d_out, uint16_t* m_out, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kQK8_0; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *d_out = fp32_to_fp16((hi - lo) / static_cast<float>(nmax));
  *m_out = fp32_to_fp16(lo);
  const float d = fp16_to_fp32(*d_out), m = fp16_to_fp32(*m_out);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK8_0; ++i) {
    q[i] = static_cast<uint8_t>(std::clamp(nearest_int((x[i] - m) * id), 0, nmax));
  }
}

}  // namespace

void q4_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_1*>(src);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d), m = fp16_to_fp32(blocks[b].m);
    unpack_q4(blocks[b].qs, q);
    for (int i = 0; i < kQK8_0; ++i) dst[b * kQK8_0 + i] = static_cast<float>(q[i]) * d + m;
  }
}

void q4_1_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ4_1*>(dst);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    quantize_affine(src + b * kQK8_0, 15, &blocks[b].d, &blocks[b].m, q);
    for (int i = 0; i < kHalf; ++i)
      blocks[b].qs[i] = static_cast<uint8_t>(q[i] | (q[i + kHalf] << 4));
  }
}

float q4_1_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ4_1*>(w);
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  uint8_t q[kQK8_0];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    unpack_q4(wb[b].qs, q);
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0; ++i) sumi += q[i] * ab[b].qs[i];
    const double da = fp16_to_fp32(ab[b].d);
    sum += fp16_to_fp32(wb[b].d) * da * sumi + fp16_to_fp32(wb[b].m) * da * activation_sum(ab[b]);
  }
  return static_cast<float>(sum);
}

void q5_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_0*>(src);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    unpack_q5(blocks[b].qs, blocks[b].qh, q);
    for (int i = 0; i < kQK8_0; ++i) dst[b * kQK8_0 + i] = static_cast<float>(q[i] - 16) * d;
  }
}

// As Q4_0: the element of largest magnitude maps to level -16, with the fp16 scale rounded
// away from zero when needed to keep it on the grid.
void q5_0_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ5_0*>(dst);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* x = src + b * kQK8_0;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQK8_0; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    uint16_t dh = fp32_to_fp16(max / -16.0f);
    if (std::fabs(fp16_to_fp32(dh)) * 16.0f < amax) ++dh;
    const float d = fp16_to_fp32(dh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = dh;
    for (int i = 0; i < kQK8_0; ++i) {
      q[i] = static_cast<uint8_t>(std::clamp(nearest_int(x[i] * id) + 16, 0, 31));
    }
    pack_q5(q, blocks[b].qs, blocks[b].qh);
  }
}

float q5_0_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ5_0*>(w);
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  uint8_t q[kQK8_0];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    unpack_q5(wb[b].qs, wb[b].qh, q);
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0; ++i) sumi += (q[i] - 16) * ab[b].qs[i];
    sum += static_cast<double>(fp16_to_fp32(wb[b].d) * fp16_to_fp32(ab[b].d)) * sumi;
  }
  return static_cast<float>(sum);
}

void q5_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_1*>(src);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d), m = fp16_to_fp32(blocks[b].m);
    unpack_q5(blocks[b].qs, blocks[b].qh, q);
    for (int i = 0; i < kQK8_0; ++i) dst[b * kQK8_0 + i] = static_cast<float>(q[i]) * d + m;
  }
}

void q5_1_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ5_1*>(dst);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    quantize_affine(src + b * kQK8_0, 31, &blocks[b].d, &blocks[b].m, q);
    pack_q5(q, blocks[b].qs, blocks[b].qh);
  }
}

float q5_1_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ5_1*>(w);
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  uint8_t q[kQK8_0];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    unpack_q5(wb[b].qs, wb[b].qh, q);
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0; ++i) sumi += q[i] * ab[b].qs[i];
    const double da = fp16_to_fp32(ab[b].d);
    sum += fp16_to_fp32(wb[b].d) * da * sumi + fp16_to_fp32(wb[b].m) * da * activation_sum(ab[b]);
  }
  return static_cast<float>(sum);
}

void iq4_nl_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_NL*>(src);
  uint8_t q[kQK8_0];
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    unpack_q4(blocks[b].qs, q);
    for (int i = 0; i < kQK8_0; ++i)
      dst[b * kQK8_0 + i] = d * static_cast<float>(kIQ4NLValues[q[i]]);
  }
}

void iq4_nl_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b)
    quantize_iq4_nl_block(src + b * kQK8_0, nullptr, blocks[b]);
}

float iq4_nl_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockIQ4_NL*>(w);
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  uint8_t q[kQK8_0];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    unpack_q4(wb[b].qs, q);
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0; ++i) sumi += kIQ4NLValues[q[i]] * ab[b].qs[i];
    sum += static_cast<double>(fp16_to_fp32(wb[b].d) * fp16_to_fp32(ab[b].d)) * sumi;
  }
  return static_cast<float>(sum);
}

}  // namespace strata::kernels::ref
