// The AMX tile instructions the AMX GEMMs use (amx_group_gemm.h, amx_lane_gemm.h), in two
// forms with one interface:
//   HardwareTilesOf<K>  the instructions themselves (inline assembly, so no file needs
//                       -mamx-* flags; only run where cpu_has_amx_int8(): the OS must have
//                       granted the tile state, or the first tile instruction faults)
//   EmulatedTilesOf<K>  a scalar model of each instruction as Intel's pseudo-code defines it
//                       (TDPBSSD: dst.row[m].dword[n] += the dot products of the four signed
//                       bytes of a.row[m].dword[k] and b.row[k].dword[n], for k < a.colsb /
//                       4), so the GEMMs around the tiles are tested bit for bit on CPUs
//                       without AMX.
// Two slots of three tiles each, so a GEMM can have two blocks in flight: slot s uses tmm(3s)
// as C (16 rows x 16 int32), tmm(3s + 1) as A (16 rows x K signed bytes: 16 tokens x K
// elements of one block) and tmm(3s + 2) as B (K / 4 rows x 64 signed bytes: 4-byte groups of
// 16 weight rows, the VNNI order TDPBSSD reads). K is 32 for the group layouts' 32-element
// blocks and 16 for the K-quants' 16-element sub-blocks (HardwareTiles / EmulatedTiles
// name the former).
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kernels {

// Tile shapes (bytes per row, rows) shared by both forms.
inline constexpr int kAmxTileM = 16;       // C and A rows: tokens
inline constexpr int kAmxTileN = 16;       // C columns: weight rows
inline constexpr int kAmxTileKBytes = 32;  // A bytes per row: one block of 32 quants

// The 64-byte operand of LDTILECFG (palette 1).
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

// The two slots' tiles with A rows of kKBytes (a multiple of 4, at most 64).
template <int kKBytes>
inline AmxTileConfig amx_tile_config() {
  static_assert(kKBytes % 4 == 0 && kKBytes > 0 && kKBytes <= 64);
  AmxTileConfig cfg;
  for (int s = 0; s < 2; ++s) {
    cfg.colsb[3 * s] = 4 * kAmxTileN, cfg.rows[3 * s] = kAmxTileM;
    cfg.colsb[3 * s + 1] = kKBytes, cfg.rows[3 * s + 1] = kAmxTileM;
    cfg.colsb[3 * s + 2] = 4 * kAmxTileN, cfg.rows[3 * s + 2] = kKBytes / 4;
  }
  return cfg;
}

template <int kKBytes>
struct HardwareTilesOf {
  static constexpr int kK = kKBytes;
  // Loads the configuration (zeroing every tile); a thread calls it before its first tile
  // instruction, and release() after its last.
  void start() {
    const AmxTileConfig cfg = amx_tile_config<kKBytes>();
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
  }
  void release() { __asm__ volatile("tilerelease" ::: "memory"); }
  // A: 16 rows of kKBytes bytes, `stride` bytes apart.
  template <int kSlot>
  void load_a(const void* base, int64_t stride) {
    if constexpr (kSlot == 0) {
      __asm__ volatile("tileloadd (%0,%1,1), %%tmm1" ::"r"(base), "r"(stride) : "memory");
    } else {
      __asm__ volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(base), "r"(stride) : "memory");
    }
  }
  // B: kKBytes / 4 rows of 64 bytes, consecutive.
  template <int kSlot>
  void load_b(const void* base) {
    const int64_t stride = 64;
    if constexpr (kSlot == 0) {
      __asm__ volatile("tileloadd (%0,%1,1), %%tmm2" ::"r"(base), "r"(stride) : "memory");
    } else {
      __asm__ volatile("tileloadd (%0,%1,1), %%tmm5" ::"r"(base), "r"(stride) : "memory");
    }
  }
  // C = A x B (C zeroed first).
  template <int kSlot>
  void multiply() {
    if constexpr (kSlot == 0) {
      __asm__ volatile("tilezero %%tmm0\n\ttdpbssd %%tmm2, %%tmm1, %%tmm0" ::);
    } else {
      __asm__ volatile("tilezero %%tmm3\n\ttdpbssd %%tmm5, %%tmm4, %%tmm3" ::);
    }
  }
  // C's 16 rows of 16 int32 to `out`, `stride` bytes apart.
  template <int kSlot>
  void store_c(int32_t* out, int64_t stride) {
    if constexpr (kSlot == 0) {
      __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" ::"r"(out), "r"(stride) : "memory");
    } else {
      __asm__ volatile("tilestored %%tmm3, (%0,%1,1)" ::"r"(out), "r"(stride) : "memory");
    }
  }
};

template <int kKBytes>
struct EmulatedTilesOf {
  static constexpr int kK = kKBytes;
  int8_t a[2][kAmxTileM][kKBytes];
  int8_t b[2][kKBytes / 4][4 * kAmxTileN];
  int32_t c[2][kAmxTileM][kAmxTileN];

  void start() {}
  void release() {}
  template <int kSlot>
  void load_a(const void* base, int64_t stride) {
    for (int m = 0; m < kAmxTileM; ++m)
      std::memcpy(a[kSlot][m], static_cast<const uint8_t*>(base) + m * stride, kKBytes);
  }
  template <int kSlot>
  void load_b(const void* base) {
    std::memcpy(b[kSlot], base, sizeof b[kSlot]);
  }
  template <int kSlot>
  void multiply() {
    for (int m = 0; m < kAmxTileM; ++m) {
      for (int n = 0; n < kAmxTileN; ++n) {
        int32_t acc = 0;
        for (int k = 0; k < kKBytes / 4; ++k) {
          for (int i = 0; i < 4; ++i)
            acc += int32_t{a[kSlot][m][4 * k + i]} * int32_t{b[kSlot][k][4 * n + i]};
        }
        c[kSlot][m][n] = acc;
      }
    }
  }
  template <int kSlot>
  void store_c(int32_t* out, int64_t stride) {
    for (int m = 0; m < kAmxTileM; ++m)
      std::memcpy(reinterpret_cast<uint8_t*>(out) + m * stride, c[kSlot][m], sizeof c[kSlot][m]);
  }
};

using HardwareTiles = HardwareTilesOf<kAmxTileKBytes>;
using EmulatedTiles = EmulatedTilesOf<kAmxTileKBytes>;

}  // namespace strata::kernels
