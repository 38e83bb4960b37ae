// Q4_K_X16, Q5_K_X16, IQ4_XS_X16 and Q3_K_X16 (blocks.h): the byte moves between
// Q4_K/Q5_K/IQ4_XS/Q3_K and their repacked layouts, and the scalar reference kernels that
// model kquant_q{3,4,5}_x16_{avx512,avx2}.cpp and kquant_iq4_x16_{avx512,avx2}.cpp.
//
// ref::q4_k_x16_vec_dot is an exact model of those kernels, not a double-precision
// yardstick like ref::q4_k_vec_dot: lane j (16 elements, half j % 2 of Q4_K sub-block
// j / 2) sums its 16 products exactly in int32 (below 2^24, so its float conversion is
// exact); then acc[j] = fma(float(lane), (d * sc[j / 2]) * d_a, acc[j]) and acc[j] =
// fma(dmin * m[j / 2], float(bias[j]) * (d_a / 32), acc[j]) over the blocks (bias = -32 *
// the lane's activation sum; d * sc and dmin * m are exact), and the lane tree of
// q6_k_x16_vec_dot. The weight factors are per row and the activation factors per token, so
// a GEMM block pays one multiply and two fmas per (row, token) for both terms. So each
// output agrees with both kernels bit for bit (tests/kernels/interleaved_test.cpp) and with
// the file layout's kernels up to float rounding. q5_k_x16_vec_dot keeps the older order,
// acc[j] = fma(d * d_a, float(lane * sc), acc[j]) and fma(dmin * d_a / 32, float(bias[j] *
// m), acc[j]): the same change measured no faster for its kernels.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/bit_transpose.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/kernels_ref.h"

namespace strata::kernels {

namespace {

// Byte (within qs) and nibble shift of element e in Q4_K (64-element chunk e / 64: its
// first 32 elements are the low nibbles of qs[32 * chunk ..], the next 32 the high) and
// in Q4_K_X16 (e = 16j + 4k + i: byte 64 * (k % 2) + 4j + i, nibble k / 2).
struct NibblePlace {
  int byte, shift;
};
NibblePlace q4_k_place(int e) {
  return {32 * (e / 64) + e % 32, 4 * ((e % 64) / 32)};
}
NibblePlace q4_k_x16_place(int e) {
  const int j = e / 16, k = (e % 16) / 4, i = e % 4;
  return {64 * (k % 2) + 4 * j + i, 4 * (k / 2)};
}

// IQ4_XS: sub-block e / 32's low nibbles (qs[16 * (e / 32) ..]) are its first 16 elements.
NibblePlace iq4_xs_place(int e) {
  return {16 * (e / 32) + e % 16, 4 * ((e % 32) / 16)};
}

// The places are template arguments so that they inline: called through pointers, two
// calls an element made these moves a large part of loading a model.
template <NibblePlace (*from)(int), NibblePlace (*to)(int)>
void move_nibbles(const uint8_t* qs, uint8_t* out) {
  std::memset(out, 0, kQK_K / 2);
  for (int e = 0; e < kQK_K; ++e) {
    const NibblePlace f = from(e), t = to(e);
    out[t.byte] = static_cast<uint8_t>(out[t.byte] | ((qs[f.byte] >> f.shift) & 15) << t.shift);
  }
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void store_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}

// A bit plane stored as Q3_K's hmask and Q5_K's qh (bit e / 32 of byte e % 32 for element
// e) as Q3_K_X16's and Q5_K_X16's 64-bit words (word k, bit n for e = 16j + 4k + i, n =
// 4j + i): byte t of word k holds bit t of bytes 4k + i (bit i) and 16 + 4k + i (bit 4 +
// i), an 8 x 8 bit transpose of those bytes.
void high_bits_as_words(const uint8_t* hmask, uint64_t (&words)[4]) {
  for (int k = 0; k < 4; ++k) {
    const uint64_t rows = load_u32(hmask + 4 * k) | uint64_t{load_u32(hmask + 16 + 4 * k)} << 32;
    words[k] = transpose_bits_8x8(rows);
  }
}
// The same words as Q3_K_X16's hmask and Q5_K_X16's qh bytes: word k in bytes 8k .. 8k + 7,
// low byte first.
void high_bits_to_x16_bytes(const uint8_t* file_bits, uint8_t* x16_bits) {
  uint64_t words[4];
  high_bits_as_words(file_bits, words);
  for (int k = 0; k < 4; ++k) {
    for (int m = 0; m < 8; ++m) x16_bits[8 * k + m] = static_cast<uint8_t>(words[k] >> (8 * m));
  }
}

// Q5_K: the fifth bit of element e is bit e / 32 of qh[e % 32]; Q5_K_X16: bit n % 8 of
// qh[8k + n / 8] for e = 16j + 4k + i, n = 4j + i.
int q5_k_x16_high(const uint8_t* qh, int e) {
  const int j = e / 16, k = (e % 16) / 4, n = 4 * j + e % 4;
  return (qh[8 * k + n / 8] >> (n % 8)) & 1;
}
void set_q5_k_high(uint8_t* qh, int e) {
  qh[e % 32] = static_cast<uint8_t>(qh[e % 32] | 1 << (e / 32));
}

}  // namespace

void arrange_q4_k_x16(const BlockQ4_K* src, BlockQ4_Kx16* dst) {
  move_nibbles<q4_k_place, q4_k_x16_place>(src->qs, dst->qs);
  std::memcpy(dst->scales, src->scales, sizeof(dst->scales));
  dst->d = src->d;
  dst->dmin = src->dmin;
}

void unarrange_q4_k_x16(const BlockQ4_Kx16& src, BlockQ4_K* dst) {
  move_nibbles<q4_k_x16_place, q4_k_place>(src.qs, dst->qs);
  std::memcpy(dst->scales, src.scales, sizeof(dst->scales));
  dst->d = src.d;
  dst->dmin = src.dmin;
}

void arrange_q5_k_x16(const BlockQ5_K* src, BlockQ5_Kx16* dst) {
  move_nibbles<q4_k_place, q4_k_x16_place>(src->qs, dst->qs);
  high_bits_to_x16_bytes(src->qh, dst->qh);
  std::memcpy(dst->scales, src->scales, sizeof(dst->scales));
  dst->d = src->d;
  dst->dmin = src->dmin;
}

void unarrange_q5_k_x16(const BlockQ5_Kx16& src, BlockQ5_K* dst) {
  move_nibbles<q4_k_x16_place, q4_k_place>(src.qs, dst->qs);
  std::memset(dst->qh, 0, sizeof(dst->qh));
  for (int e = 0; e < kQK_K; ++e) {
    if (q5_k_x16_high(src.qh, e)) set_q5_k_high(dst->qh, e);
  }
  std::memcpy(dst->scales, src.scales, sizeof(dst->scales));
  dst->d = src.d;
  dst->dmin = src.dmin;
}

void arrange_iq4_xs_x16(const BlockIQ4_XS* src, BlockIQ4_XSx16* dst) {
  move_nibbles<iq4_xs_place, q4_k_x16_place>(src->qs, dst->qs);
  std::memcpy(dst->scales_l, src->scales_l, sizeof(dst->scales_l));
  dst->d = src->d;
  dst->scales_h = src->scales_h;
}

void unarrange_iq4_xs_x16(const BlockIQ4_XSx16& src, BlockIQ4_XS* dst) {
  move_nibbles<q4_k_x16_place, iq4_xs_place>(src.qs, dst->qs);
  std::memcpy(dst->scales_l, src.scales_l, sizeof(dst->scales_l));
  dst->d = src.d;
  dst->scales_h = src.scales_h;
}

int ref::six_bit_value(const uint8_t* string, int j) {
  const int byte = 6 * j / 8, shift = 6 * j % 8;
  const int two = string[byte] | (byte + 1 < 12 ? string[byte + 1] << 8 : 0);
  return (two >> shift) & 63;
}

void ref::put_six_bit_values(uint8_t* string, const int (&values)[16]) {
  uint64_t low = 0, high = 0;  // bits 0-63 and 64-95 of the string
  for (int j = 0; j < 16; ++j) {
    const auto v = static_cast<uint64_t>(values[j] & 63);
    const int bit = 6 * j;
    if (bit < 64) {
      low |= v << bit;
      if (bit > 58) high |= v >> (64 - bit);
    } else {
      high |= v << (bit - 64);
    }
  }
  for (int i = 0; i < 8; ++i) string[i] = static_cast<uint8_t>(low >> (8 * i));
  for (int i = 0; i < 4; ++i) string[8 + i] = static_cast<uint8_t>(high >> (8 * i));
}

namespace {

// Bit 2 of byte n (< 64) of quant vector k (< 4): Q3_K_X16's byte masks, one 64-bit word
// per vector, or Q3_K_X16S's plane sliced for 32-byte halves (blocks.h).
struct Q3HighBit {
  int byte, shift;
  Q3HighBit(const BlockQ3_Kx16*, int k, int n) : byte(8 * k + n / 8), shift(n % 8) {}
  Q3HighBit(const BlockQ3_Kx16S*, int k, int n) : byte(n % 32), shift(k + 4 * (n / 32)) {}
};

// Q2_K's qs and Q3_K's low bits: element e = 128h + 32c + l is bits 2c, 2c + 1 of
// qs[32h + l]. Their X16 layouts (e = 16j + 4k + i, n = 4j + i): bits 2k, 2k + 1 of qs[n],
// so X16 bytes 4j .. 4j + 3 take field c = (j % 8) / 2 of file bytes b0 + 4k .. b0 + 4k + 3,
// b0 = 32(j / 8) + 16(j % 2): four bytes at a time. (Element by element this took ~10 cycles
// an element: 1.9 s of loading a 1B Q2_K file.)
void two_bits_to_x16(const uint8_t* file_qs, uint8_t* x16_qs) {
  for (int j = 0; j < 16; ++j) {
    const uint8_t* in = file_qs + 32 * (j / 8) + 16 * (j % 2);
    const int c = (j % 8) / 2;
    uint32_t out = 0;
    for (int k = 0; k < 4; ++k) out |= ((load_u32(in + 4 * k) >> (2 * c)) & 0x03030303u) << (2 * k);
    store_u32(x16_qs + 4 * j, out);
  }
}

// Q3_K's bit 2 of each element (hmask): Q3_K_X16 holds it as high_bits_to_x16_bytes does;
// Q3_K_X16S byte b holds bit b + 32h of word k at bit k + 4h: byte g + 4h of the words,
// transposed again for each 8 bytes g.
void high_bits_to_x16(const uint8_t* file_hmask, BlockQ3_Kx16* dst) {
  high_bits_to_x16_bytes(file_hmask, dst->hmask);
}
void high_bits_to_x16(const uint8_t* file_hmask, BlockQ3_Kx16S* dst) {
  uint64_t words[4];
  high_bits_as_words(file_hmask, words);
  for (int g = 0; g < 4; ++g) {
    uint64_t rows = 0;  // byte k + 4h: byte g + 4h of word k
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k)
        rows |= ((words[k] >> (8 * (g + 4 * h))) & 0xff) << (8 * (k + 4 * h));
    }
    const uint64_t bytes = transpose_bits_8x8(rows);
    for (int c = 0; c < 8; ++c) dst->hmask[8 * g + c] = static_cast<uint8_t>(bytes >> (8 * c));
  }
}

// Scale j of Q3_K_X16 at bits 6j .. 6j + 5.
template <class Block>
void arrange_q3(const BlockQ3_K* src, Block* dst) {
  two_bits_to_x16(src->qs, dst->qs);
  high_bits_to_x16(src->hmask, dst);
  int scales[kQK_K / 16];
  for (int j = 0; j < kQK_K / 16; ++j) scales[j] = ref::q3_k_scale(src->scales, j);
  ref::put_six_bit_values(dst->scales, scales);
  dst->d = src->d;
}

template <class Block>
void unarrange_q3(const Block& src, BlockQ3_K* dst) {
  std::memset(dst->qs, 0, sizeof(dst->qs));
  std::memset(dst->hmask, 0, sizeof(dst->hmask));
  for (int e = 0; e < kQK_K; ++e) {
    const int k = (e % 16) / 4, n = 4 * (e / 16) + e % 4;
    const int low = (src.qs[n] >> (2 * k)) & 3;
    const Q3HighBit hb(&src, k, n);
    const int high = (src.hmask[hb.byte] >> hb.shift) & 1;
    uint8_t& q = dst->qs[32 * (e / 128) + e % 32];
    q = static_cast<uint8_t>(q | low << (2 * ((e % 128) / 32)));
    dst->hmask[e % 32] = static_cast<uint8_t>(dst->hmask[e % 32] | high << (e / 32));
  }
  // Q3_K: low nibbles of sub-blocks 0-7 in bytes 0-7, of 8-15 in their high halves; the
  // 2-bit highs of s in bits 2(s / 4) of byte 8 + s % 4 (q3_k_scale's inverse).
  std::memset(dst->scales, 0, sizeof(dst->scales));
  for (int s = 0; s < kQK_K / 16; ++s) {
    const int sc = ref::six_bit_value(src.scales, s);
    uint8_t& low = dst->scales[s % 8];
    low = static_cast<uint8_t>(low | (sc & 15) << (4 * (s / 8)));
    uint8_t& high = dst->scales[8 + s % 4];
    high = static_cast<uint8_t>(high | (sc >> 4) << (2 * (s / 4)));
  }
  dst->d = src.d;
}

}  // namespace

void arrange_q3_k_x16(const BlockQ3_K* src, BlockQ3_Kx16* dst) {
  arrange_q3(src, dst);
}
void unarrange_q3_k_x16(const BlockQ3_Kx16& src, BlockQ3_K* dst) {
  unarrange_q3(src, dst);
}
void arrange_q3_k_x16s(const BlockQ3_K* src, BlockQ3_Kx16S* dst) {
  arrange_q3(src, dst);
}
void unarrange_q3_k_x16s(const BlockQ3_Kx16S& src, BlockQ3_K* dst) {
  unarrange_q3(src, dst);
}

// Q2_K: element e = 128h + 32c + l is bits 2c, 2c + 1 of qs[32h + l]. Q2_K_X16 (e = 16j +
// 4k + i, n = 4j + i): bits 2k, 2k + 1 of qs[n].
void arrange_q2_k_x16(const BlockQ2_K* src, BlockQ2_Kx16* dst) {
  two_bits_to_x16(src->qs, dst->qs);
  std::memcpy(dst->scales, src->scales, sizeof(dst->scales));
  dst->d = src->d, dst->dmin = src->dmin;
}

void unarrange_q2_k_x16(const BlockQ2_Kx16& src, BlockQ2_K* dst) {
  std::memset(dst->qs, 0, sizeof(dst->qs));
  for (int e = 0; e < kQK_K; ++e) {
    const int k = (e % 16) / 4, n = 4 * (e / 16) + e % 4;
    const int q = (src.qs[n] >> (2 * k)) & 3;
    uint8_t& out = dst->qs[32 * (e / 128) + e % 32];
    out = static_cast<uint8_t>(out | q << (2 * ((e % 128) / 32)));
  }
  std::memcpy(dst->scales, src.scales, sizeof(dst->scales));
  dst->d = src.d, dst->dmin = src.dmin;
}

namespace ref {

void q4_k_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_Kx16*>(src);
  BlockQ4_K block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange_q4_k_x16(blocks[b], &block);
    q4_k_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

void q4_k_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ4_K, BlockQ4_Kx16, q4_k_from_float, arrange_q4_k_x16, kQK_K>(src, dst, n);
}

float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ4_Kx16*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float dw = fp16_to_fp32(wb[b].d), dmw = fp16_to_fp32(wb[b].dmin);
    const float ad = ab[b].d, adc = ab[b].d * 0.03125f;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sc, m;
      q4_k_scale_min(wb[b].scales, j / 2, &sc, &m);
      int32_t lane = 0;
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int q = (wb[b].qs[64 * (k % 2) + 4 * j + i] >> (4 * (k / 2))) & 15;
          lane += q * ab[b].qs[64 * k + 4 * j + i];
        }
      }
      // dw x sc and dmw x m are exact (11-bit halves times 6-bit integers).
      acc[j] = std::fma(static_cast<float>(lane), dw * static_cast<float>(sc) * ad, acc[j]);
      acc[j] =
          std::fma(dmw * static_cast<float>(m), static_cast<float>(ab[b].bias[j]) * adc, acc[j]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

void q5_k_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_Kx16*>(src);
  BlockQ5_K block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange_q5_k_x16(blocks[b], &block);
    q5_k_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

void q5_k_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ5_K, BlockQ5_Kx16, q5_k_from_float, arrange_q5_k_x16, kQK_K>(src, dst, n);
}

// Q4_K_X16's lanes with 5-bit quants (the float steps: see the top).
float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ5_Kx16*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float scale = fp16_to_fp32(wb[b].d) * ab[b].d;
    const float min_scale = fp16_to_fp32(wb[b].dmin) * ab[b].d * 0.03125f;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sc, m;
      q4_k_scale_min(wb[b].scales, j / 2, &sc, &m);
      int32_t lane = 0;
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int q = ((wb[b].qs[64 * (k % 2) + 4 * j + i] >> (4 * (k / 2))) & 15) |
                        q5_k_x16_high(wb[b].qh, 16 * j + 4 * k + i) << 4;
          lane += q * ab[b].qs[64 * k + 4 * j + i];
        }
      }
      acc[j] = std::fma(scale, static_cast<float>(lane * sc), acc[j]);
      acc[j] = std::fma(min_scale, static_cast<float>(ab[b].bias[j] * m), acc[j]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

void iq4_xs_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_XSx16*>(src);
  BlockIQ4_XS block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange_iq4_xs_x16(blocks[b], &block);
    iq4_xs_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

void iq4_xs_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockIQ4_XS, BlockIQ4_XSx16, iq4_xs_from_float, arrange_iq4_xs_x16, kQK_K>(src,
                                                                                            dst, n);
}

// The exact model of kquant_iq4_x16_{avx512,avx2}.cpp: lane j sums its 16 products of grid
// values by activations exactly (|sum| <= 16 x 127 x 127 = 258064) and is multiplied by the
// signed scale ls[j / 2] - 32 (|product| <= 2^23, so its float conversion is exact); then
// acc[j] = fma(d * d_a, float(scaled), acc[j]) over the blocks and the lane tree of
// q6_k_x16_vec_dot.
float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockIQ4_XSx16*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float scale = fp16_to_fp32(wb[b].d) * ab[b].d;
    for (int j = 0; j < kQK_K / 16; ++j) {
      const int sc = iq4_xs_scale(wb[b].scales_h, wb[b].scales_l, j / 2) - 32;
      int32_t lane = 0;
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int q = (wb[b].qs[64 * (k % 2) + 4 * j + i] >> (4 * (k / 2))) & 15;
          lane += kIQ4NLValues[q] * ab[b].qs[64 * k + 4 * j + i];
        }
      }
      acc[j] = std::fma(scale, static_cast<float>(lane * sc), acc[j]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

namespace {

template <class Block, void (*unarrange)(const Block&, BlockQ3_K*)>
void q3_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  BlockQ3_K block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange(blocks[b], &block);
    q3_k_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

// The exact model of kquant_q3_x16_{avx512,avx2}.cpp: lane j (sub-block j) sums its 16
// products of quants in [-4, 3] by activations exactly (the kernels' biased sum plus
// bias[j] / 8 is the same integer) and is multiplied by the signed scale sc[j] - 32
// (|product| <= 16 x 4 x 127 x 32 < 2^24, exact in float); then acc[j] = fma(d * d_a,
// float(scaled), acc[j]) over the blocks and the lane tree of q6_k_x16_vec_dot.
template <class Block>
float q3_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const Block*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float scale = fp16_to_fp32(wb[b].d) * ab[b].d;
    for (int j = 0; j < kQK_K / 16; ++j) {
      const int sc = six_bit_value(wb[b].scales, j) - 32;
      int32_t lane = 0;
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int nn = 4 * j + i;
          const Q3HighBit hb(&wb[b], k, nn);
          const int q =
              ((wb[b].qs[nn] >> (2 * k)) & 3) + 4 * ((wb[b].hmask[hb.byte] >> hb.shift) & 1) - 4;
          lane += q * ab[b].qs[64 * k + 4 * j + i];
        }
      }
      acc[j] = std::fma(scale, static_cast<float>(lane * sc), acc[j]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

}  // namespace

void q3_k_x16_to_float(const void* src, float* dst, int64_t n) {
  q3_to_float<BlockQ3_Kx16, unarrange_q3_k_x16>(src, dst, n);
}
void q3_k_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ3_K, BlockQ3_Kx16, q3_k_from_float, arrange_q3_k_x16, kQK_K>(src, dst, n);
}
float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return q3_vec_dot<BlockQ3_Kx16>(n, w, a);
}

void q3_k_x16s_to_float(const void* src, float* dst, int64_t n) {
  q3_to_float<BlockQ3_Kx16S, unarrange_q3_k_x16s>(src, dst, n);
}
void q3_k_x16s_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ3_K, BlockQ3_Kx16S, q3_k_from_float, arrange_q3_k_x16s, kQK_K>(src, dst, n);
}
float q3_k_x16s_vec_dot(int64_t n, const void* w, const void* a) {
  return q3_vec_dot<BlockQ3_Kx16S>(n, w, a);
}

void q2_k_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2_Kx16*>(src);
  BlockQ2_K block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange_q2_k_x16(blocks[b], &block);
    q2_k_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

void q2_k_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ2_K, BlockQ2_Kx16, q2_k_from_float, arrange_q2_k_x16, kQK_K>(src, dst, n);
}

// The exact model of kquant_q2_x16_avx512.cpp, q4_k_x16_vec_dot's steps with lane j's own
// 4-bit scale and min (scales[j] & 15, scales[j] >> 4): |lane x sc| <= 16 x 3 x 127 x 15
// and |bias x m| <= 32 x 16 x 127 x 15, both below 2^24.
float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ2_Kx16*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float scale = fp16_to_fp32(wb[b].d) * ab[b].d;
    const float min_scale = fp16_to_fp32(wb[b].dmin) * ab[b].d;
    // Lane 2k: the scale terms of sub-blocks 2k and 2k + 1; lane 2k + 1: their min terms.
    for (int k = 0; k < kQK_K / 32; ++k) {
      int32_t scaled = 0, min_terms = 0;
      for (int j = 2 * k; j < 2 * k + 2; ++j) {
        const int sc = wb[b].scales[j] & 15, m = wb[b].scales[j] >> 4;
        int32_t lane = 0;
        for (int v = 0; v < 4; ++v) {
          for (int i = 0; i < 4; ++i)
            lane += ((wb[b].qs[4 * j + i] >> (2 * v)) & 3) * ab[b].qs[64 * v + 4 * j + i];
        }
        scaled += lane * sc;
        min_terms += m * ab[b].neg_sums[4 * k + j % 2];
      }
      acc[2 * k] = std::fma(scale, static_cast<float>(scaled), acc[2 * k]);
      acc[2 * k + 1] = std::fma(min_scale, static_cast<float>(min_terms), acc[2 * k + 1]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

}  // namespace ref
}  // namespace strata::kernels
