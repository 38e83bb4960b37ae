// FileBytes::read_into_huge_pages: a file read by several threads, each its own range
// (ranges rounded to 2 MiB, the last one short or empty), holds the file's bytes.
#include "gguf/file_bytes.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

TEST(FileBytes, ReadByThreadsInRangesHoldsTheFile) {
  const std::string path = ::testing::TempDir() + "strata_file_bytes.bin";
  const auto bytes = test::pattern_bytes((size_t{5} << 20) + 4097, 3);  // not whole pages
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  for (const size_t per_thread : {size_t{1}, size_t{4096}, size_t{300000}, size_t{64} << 20}) {
    const FileBytes file = FileBytes::read_into_huge_pages(path, per_thread);
    ASSERT_EQ(file.size(), bytes.size()) << per_thread;
    EXPECT_EQ(std::memcmp(file.data(), bytes.data(), bytes.size()), 0) << per_thread;
  }
  std::filesystem::remove(path);
  EXPECT_THROW(FileBytes::read_into_huge_pages(path), Error);
}

}  // namespace
}  // namespace strata::gguf
