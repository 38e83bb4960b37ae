// Truncations and random mutations of a valid file, and errors from open(): every load
// either succeeds or throws strata::Error, never anything else (run under ASan/UBSan to
// also catch over-reads).

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::load_fails_with;

// Touches everything a loaded file exposes, so that a bad offset surfaces under ASan.
uint64_t exercise(const GgufFile& f) {
  uint64_t sum = 0;
  for (const auto& [key, value] : f.metadata()) sum += key.size() + value.to_display().size();
  for (const auto& t : f.tensors()) {
    const auto bytes = f.tensor_bytes(t);
    sum += bytes.front() + bytes.back();
  }
  return sum;
}

TEST(Fuzz, EveryTruncationIsRejected) {
  const auto bytes = test::small_writer().write_to_buffer();
  const GgufFile full = GgufFile::from_buffer(bytes, "full.gguf");
  const TensorInfo& last = full.tensors().back();
  ASSERT_EQ(full.data_offset() + last.offset + last.n_bytes, bytes.size());
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_TRUE(load_fails_with(prefix, {})) << "prefix of " << len << " bytes";
  }
}

TEST(Fuzz, TruncatingTrailingPaddingIsHarmless) {
  // The writer pads the last tensor up to the alignment; cutting only padding still loads.
  GgufWriter w;
  const std::vector<uint8_t> data(20, 7);
  w.add_tensor("t", DType::F32, {5}, data.data(), data.size());
  const auto bytes = w.write_to_buffer();
  const GgufFile f = GgufFile::from_buffer(bytes, "pad.gguf");
  const uint64_t end = f.data_offset() + 20;
  ASSERT_EQ(bytes.size(), f.data_offset() + 32);
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
    if (len < end) {
      EXPECT_TRUE(load_fails_with(prefix, {})) << len;
    } else {
      EXPECT_NO_THROW(GgufFile::from_buffer(prefix, "pad.gguf")) << len;
    }
  }
}

TEST(Fuzz, RandomMutationsLoadOrThrowStrataError) {
  const auto base = test::small_writer().write_to_buffer();
  const uint64_t header_end = GgufFile::from_buffer(base, "base.gguf").data_offset();
  // Values that tend to hit edge cases when written over a length, count or offset.
  const uint64_t interesting[] = {0,
                                  1,
                                  2,
                                  4,
                                  5,
                                  31,
                                  32,
                                  255,
                                  0x7FFFFFFF,
                                  0xFFFFFFFF,
                                  uint64_t{1} << 32,
                                  uint64_t{1} << 62,
                                  INT64_MAX,
                                  ~uint64_t{0},
                                  ~uint64_t{0} - 31};
  std::mt19937_64 rng(20240611);
  int loaded = 0;
  int rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> bytes = base;
    const int n_mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < n_mutations; ++m) {
      // Mostly hit the header (where the parser lives), sometimes the data.
      const uint64_t span =
          std::min<uint64_t>(rng() % 8 == 0 ? bytes.size() : header_end, bytes.size());
      const size_t pos = static_cast<size_t>(rng() % span);
      switch (rng() % 4) {
        case 0:
          bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          bytes[pos] = static_cast<uint8_t>(rng());
          break;
        case 2: {
          const uint64_t v = interesting[rng() % std::size(interesting)];
          const size_t n = std::min<size_t>(8, bytes.size() - pos);
          std::memcpy(bytes.data() + pos, &v, n);
          break;
        }
        default:
          bytes.resize(static_cast<size_t>(rng() % bytes.size()));
          break;
      }
      if (bytes.empty()) break;
    }
    try {
      const GgufFile f = GgufFile::from_buffer(bytes, "mutant.gguf");
      exercise(f);
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << " threw a non-strata exception: " << e.what();
    } catch (...) {
      ADD_FAILURE() << "iteration " << iter << " threw a non-exception";
    }
  }
  EXPECT_EQ(loaded + rejected, 2000);
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

TEST(Fuzz, OpenReportsFileSystemErrors) {
  const std::string missing = ::testing::TempDir() + "strata_gguf_missing.gguf";
  try {
    GgufFile::open(missing);
    ADD_FAILURE() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing + ": cannot open"), std::string::npos) << e.what();
  }
  EXPECT_THROW(GgufFile::open(::testing::TempDir()), Error);

  const std::string empty = ::testing::TempDir() + "strata_gguf_empty.gguf";
  std::FILE* f = std::fopen(empty.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_THROW(GgufFile::open(empty), Error);

  // A hostile file on disk is rejected through the mapping, naming the path.
  const std::string bad = ::testing::TempDir() + "strata_gguf_bad.gguf";
  auto bytes = test::small_writer().write_to_buffer();
  bytes.resize(bytes.size() - 1);
  f = std::fopen(bad.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  try {
    GgufFile::open(bad);
    ADD_FAILURE() << "opened a truncated file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ": tensor 'output_norm.weight' offset"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(empty);
  std::filesystem::remove(bad);
}

}  // namespace
}  // namespace strata::gguf
