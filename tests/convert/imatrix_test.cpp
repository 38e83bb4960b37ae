// Activation statistics (convert/imatrix.h): accumulation, the file round trip and
// hostile files.
#include "convert/imatrix.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"

namespace strata {
namespace {

std::string tmp_path(const char* name) {
  return (::testing::TempDir() + "/strata_imatrix_") + name;
}

TEST(Imatrix, AccumulatesSquaresPerColumn) {
  Imatrix m;
  const float a[] = {1, 2, 3, -1, 0, 2};  // 2 tokens x 3 columns
  m.add("w", a, 2, 3);
  const float b[] = {2, 2, 2};
  m.add("w", b, 1, 3);
  const auto imp = m.importance("w");
  ASSERT_EQ(imp.size(), 3u);
  EXPECT_FLOAT_EQ(imp[0], (1 + 1 + 4) / 3.0f);
  EXPECT_FLOAT_EQ(imp[1], (4 + 0 + 4) / 3.0f);
  EXPECT_FLOAT_EQ(imp[2], (9 + 4 + 4) / 3.0f);
  EXPECT_EQ(m.tensors().at("w").count, 3u);
  EXPECT_TRUE(m.importance("other").empty());
  EXPECT_THROW(m.add("w", a, 1, 2), Error);  // column count changed
}

TEST(Imatrix, FileRoundTrip) {
  Imatrix m;
  const float a[] = {0.5f, -1.5f, 2.0f, 0.25f};
  m.add("blk.0.attn_q.weight", a, 2, 2);
  m.add("token_embd.weight", a, 1, 4);
  const std::string p = tmp_path("rt.bin");
  m.save(p);
  const Imatrix r = Imatrix::load(p);
  ASSERT_EQ(r.tensors().size(), 2u);
  EXPECT_EQ(r.importance("blk.0.attn_q.weight"), m.importance("blk.0.attn_q.weight"));
  EXPECT_EQ(r.importance("token_embd.weight"), m.importance("token_embd.weight"));
  std::remove(p.c_str());
}

TEST(Imatrix, HostileFiles) {
  EXPECT_THROW(Imatrix::load(tmp_path("missing.bin")), Error);
  Imatrix m;
  const float a[] = {1, 2};
  m.add("w", a, 1, 2);
  const std::string p = tmp_path("good.bin");
  m.save(p);
  std::ifstream in(p, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto check = [&](std::string bytes, const char* what) {
    const std::string q = tmp_path("bad.bin");
    std::ofstream(q, std::ios::binary) << bytes;
    EXPECT_THROW(Imatrix::load(q), Error) << what;
    std::remove(q.c_str());
  };
  check("", "empty");
  check("NOTMAGIC" + good.substr(8), "magic");
  for (size_t n = 8; n < good.size(); n += 3) check(good.substr(0, n), "truncated");
  check(good + "x", "trailing byte");
  std::string neg = good;
  const float minus = -1.0f;
  std::memcpy(neg.data() + neg.size() - 4, &minus, 4);
  check(neg, "negative value");
  std::string huge = good;
  const uint32_t cols = 0x7fffffff;
  std::memcpy(huge.data() + 8 + 4 + 4 + 1, &cols, 4);  // magic, count, name length, "w"
  check(huge, "column count past the end");
  std::remove(p.c_str());
}

}  // namespace
}  // namespace strata
