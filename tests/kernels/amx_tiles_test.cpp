// The AMX tile instructions (kernels/quant/amx_tiles.h) against their scalar model, model
// free, with the group GEMMs' 32-byte A rows and the lane GEMMs' 16-byte ones: the model
// against a plain triple loop everywhere, and on CPUs that grant AMX the instructions
// against the model, so a wrong tile configuration or operand order shows up here rather
// than only in the GEMMs built on them.
#include "kernels/quant/amx_tiles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

template <int K>
struct TileCase {
  int8_t a[2][kAmxTileM][64];  // A rows K bytes long, 64 bytes apart
  int8_t b[2][K / 4][4 * kAmxTileN];
};

template <int K>
TileCase<K> random_case(Rng& rng) {
  TileCase<K> c;
  for (size_t i = 0; i < sizeof c.a; ++i)
    (&c.a[0][0][0])[i] = static_cast<int8_t>(rng.next() >> 56);
  for (size_t i = 0; i < sizeof c.b; ++i)
    (&c.b[0][0][0])[i] = static_cast<int8_t>(rng.next() >> 56);
  // Extremes in slot 0: -128 x -128 in every product of row 0 and column 0.
  for (int k = 0; k < K; ++k) c.a[0][0][k] = -128;
  for (int k = 0; k < K / 4; ++k) {
    for (int i = 0; i < 4; ++i) c.b[0][k][i] = -128;
  }
  return c;
}

// Each slot's C through the Tiles interface: loaded, multiplied, stored with a 128-byte row
// stride (the other 64 bytes of each row stay as they were: 0x5a).
template <class Tiles, int K = Tiles::kK>
std::vector<int32_t> run_tiles(const TileCase<K>& c) {
  std::vector<int32_t> out(2 * kAmxTileM * 32, 0x5a5a5a5a);
  Tiles tiles;
  tiles.start();
  tiles.template load_a<0>(c.a[0], 64);
  tiles.template load_b<0>(c.b[0]);
  tiles.template load_a<1>(c.a[1], 64);
  tiles.template load_b<1>(c.b[1]);
  tiles.template multiply<0>();
  tiles.template multiply<1>();
  tiles.template store_c<0>(out.data(), 128);
  tiles.template store_c<1>(out.data() + kAmxTileM * 32, 128);
  tiles.release();
  return out;
}

template <int K>
void expect_model_is_the_signed_byte_matrix_product() {
  Rng rng(21);
  const TileCase<K> c = random_case<K>(rng);
  const std::vector<int32_t> got = run_tiles<EmulatedTilesOf<K>>(c);
  for (int s = 0; s < 2; ++s) {
    for (int m = 0; m < kAmxTileM; ++m) {
      for (int n = 0; n < kAmxTileN; ++n) {
        int32_t want = 0;
        for (int e = 0; e < K; ++e)  // element e of row m and of column n
          want += int32_t{c.a[s][m][e]} * int32_t{c.b[s][e / 4][4 * n + e % 4]};
        EXPECT_EQ(got[static_cast<size_t>((s * kAmxTileM + m) * 32 + n)], want)
            << "K " << K << " slot " << s << " (" << m << ", " << n << ")";
        EXPECT_EQ(got[static_cast<size_t>((s * kAmxTileM + m) * 32 + 16 + n)], 0x5a5a5a5a);
      }
    }
  }
  EXPECT_EQ(got[0], K * 128 * 128);
}

TEST(AmxTiles, ModelIsTheSignedByteMatrixProduct) {
  expect_model_is_the_signed_byte_matrix_product<kAmxTileKBytes>();
  expect_model_is_the_signed_byte_matrix_product<16>();
}

TEST(AmxTiles, InstructionsMatchTheModel) {
  if (!cpu_has_amx_int8()) {
    GTEST_SKIP() << "no AMX-INT8 on this CPU (or STRATA_NO_AMX, or the OS refused the tile "
                    "state)";
  }
  Rng rng(22);
  for (int round = 0; round < 8; ++round) {
    const TileCase<32> c = random_case<32>(rng);
    EXPECT_EQ(run_tiles<HardwareTiles>(c), run_tiles<EmulatedTiles>(c)) << "round " << round;
    const TileCase<16> c16 = random_case<16>(rng);
    EXPECT_EQ(run_tiles<HardwareTilesOf<16>>(c16), run_tiles<EmulatedTilesOf<16>>(c16))
        << "K 16 round " << round;
  }
}

}  // namespace
}  // namespace strata::kernels
