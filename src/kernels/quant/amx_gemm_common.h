// What the AMX GEMMs (amx_group_gemm.h, amx_lane_gemm.h) share: the token count from which
// they run, the rows one call unpacks, and the 16 x 16 transposes that turn a weight
// panel's per-row vectors into B tiles and per-row factors into vectors over rows.
// Included by kernel files compiled for AVX-512, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <memory>

namespace strata::kernels::avx512 {
namespace {

// Below this many tokens a GEMM stays on the VNNI kernels (decode, small batches): the
// panel's unpacking is paid per call, and with the tile instructions left out (timing
// only, Zen 5, two threads) the rest ran at 1.1-1.4x the VNNI rate at 16 tokens, 1.7-2.4x
// at 64.
constexpr int64_t kAmxMinTokens = 32;

// out[b] lane r = in[r] lane b.
inline void transpose16_epi32(const __m512i (&in)[16], __m512i (&out)[16]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: rows 2i, 2i + 1 interleaved
    t[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + c] 128-bit lane L: rows 4i..4i+3 of column 4L + c
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // column 4L + c: lane L of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
    const __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    const __m512i y0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i y1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    out[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    out[8 + c] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
    out[4 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    out[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
  }
}

inline void transpose16_ps(const __m512 (&in)[16], float* out) {
  __m512i v[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) v[i] = _mm512_castps_si512(in[i]);
  transpose16_epi32(v, t);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(out + 16 * i, t[i]);
}

// Step 3's end in both AMX GEMMs: the 16 lane accumulators (vectors over a slab's 16 rows)
// summed in hsum16's tree, as the VNNI kernels sum their lanes, and the slab's first `keep`
// rows stored at out.
inline void amx_store_lane_sums(__m512 (&acc)[16], __mmask16 keep, float* out) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm512_add_ps(acc[i], acc[i + 8]);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) acc[i] = _mm512_add_ps(acc[i], acc[i + 4]);
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) acc[i] = _mm512_add_ps(acc[i], acc[i + 2]);
  _mm512_mask_storeu_ps(out, keep, _mm512_add_ps(acc[0], acc[1]));
}

// One allocation carved into kParts parts of the given byte sizes, each on its own cache
// lines: a GEMM call's panel and activation buffers (a prefill matmul's panel: a few
// hundred KiB; not on the decode path, which stays below kAmxMinTokens). Not zeroed: the
// GEMMs write every byte before they read it.
template <int kParts>
struct AmxArena {
  std::unique_ptr<uint8_t[]> storage;
  void* parts[kParts];
  explicit AmxArena(const int64_t (&sizes)[kParts]) {
    int64_t total = 64;
    for (const int64_t s : sizes) total += (s + 63) / 64 * 64;
    storage.reset(new uint8_t[static_cast<size_t>(total)]);
    uint8_t* p = storage.get() + (64 - reinterpret_cast<uintptr_t>(storage.get()) % 64) % 64;
    for (int i = 0; i < kParts; ++i) {
      parts[i] = p;
      p += (sizes[i] + 63) / 64 * 64;
    }
  }
};

// Rows one call unpacks at most: more go in further calls, which bounds the buffers (a
// matmul's panels are far smaller: kRowBlockBytes of weights).
constexpr int64_t kAmxMaxRows = 1024;

}  // namespace
}  // namespace strata::kernels::avx512
