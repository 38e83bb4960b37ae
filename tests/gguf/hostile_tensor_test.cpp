// Malformed tensor infos and data layouts: each must be rejected with a strata::Error
// that names the tensor and the field.

#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::ByteBuilder;
using test::load_fails_with;

// One tensor 'w' (the info starts at offset 24), then `data_bytes` of data after the
// 32-byte-aligned header. n_dims is ne.size() unless overridden.
std::vector<uint8_t> one_tensor(const std::vector<int64_t>& ne, DType type = DType::F32,
                                uint64_t offset = 0, uint64_t data_bytes = 64,
                                int64_t n_dims = -1) {
  ByteBuilder b;
  b.header(1, 0).tensor("w", ne, type, offset, n_dims).pad_to(32).zeros(data_bytes);
  return b.bytes;
}

TEST(HostileTensor, ValidBaselineLoads) {
  const GgufFile f = GgufFile::from_buffer(one_tensor({16}), "ok.gguf");
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].n_bytes, 64u);
  EXPECT_EQ(f.data_offset(), 64u);
}

TEST(HostileTensor, DataPastTheEndOfTheFile) {
  EXPECT_TRUE(
      load_fails_with(one_tensor({32}), {"tensor 'w' offset at offset 49", "past the end"}));
  EXPECT_TRUE(
      load_fails_with(one_tensor({16}, DType::F32, 1024), {"tensor 'w' offset", "past the end"}));
}

TEST(HostileTensor, OffsetNearTwoToThe64) {
  EXPECT_TRUE(load_fails_with(one_tensor({16}, DType::F32, ~uint64_t{31}),
                              {"tensor 'w' offset", "overflows"}));
}

TEST(HostileTensor, TooManyDimensions) {
  EXPECT_TRUE(load_fails_with(one_tensor({1, 1, 1, 1, 1}),
                              {"tensor 'w' n_dims at offset 33", "5 is outside 1..4"}));
  EXPECT_TRUE(
      load_fails_with(one_tensor({16}, DType::F32, 0, 64, 0xFFFFFFFF), {"tensor 'w' n_dims"}));
}

TEST(HostileTensor, ZeroDimensions) {
  EXPECT_TRUE(load_fails_with(one_tensor({}), {"tensor 'w' n_dims", "0 is outside 1..4"}));
}

TEST(HostileTensor, ElementCountOverflow) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_TRUE(
      load_fails_with(one_tensor({big, big}), {"tensor 'w' ne at offset 37", "element count"}));
  // 2^63 elements fits in uint64 but not in ggml's int64 element counts.
  EXPECT_TRUE(load_fails_with(one_tensor({big, big / 2}), {"tensor 'w' ne", "element count"}));
}

TEST(HostileTensor, ByteSizeOverflow) {
  // 2^62 f64 elements are countable but need 2^65 bytes.
  const int64_t d = int64_t{1} << 31;
  EXPECT_TRUE(load_fails_with(one_tensor({d, d}, DType::F64), {"tensor 'w' size", "overflows"}));
}

TEST(HostileTensor, NegativeDimension) {
  EXPECT_TRUE(
      load_fails_with(one_tensor({16, -1}), {"tensor 'w' ne[1] at offset 45", "dimension -1"}));
  EXPECT_TRUE(load_fails_with(one_tensor({INT64_MIN}), {"tensor 'w' ne[0]", "must be at least 1"}));
}

TEST(HostileTensor, ZeroDimension) {
  EXPECT_TRUE(
      load_fails_with(one_tensor({0}), {"tensor 'w' ne[0]", "dimension 0 must be at least 1"}));
}

TEST(HostileTensor, UnknownTensorType) {
  EXPECT_TRUE(load_fails_with(one_tensor({16}, static_cast<DType>(99)),
                              {"tensor 'w' type at offset 45", "unknown tensor type id 99"}));
  // Ids 4 and 5 (the removed Q4_2/Q4_3) are unknown too.
  EXPECT_TRUE(
      load_fails_with(one_tensor({16}, static_cast<DType>(4)), {"unknown tensor type id 4"}));
}

TEST(HostileTensor, RowLengthNotAMultipleOfTheBlockSize) {
  EXPECT_TRUE(load_fails_with(one_tensor({33}, DType::Q4_0),
                              {"tensor 'w' ne[0]", "row length 33", "q4_0 block size 32"}));
  EXPECT_TRUE(load_fails_with(one_tensor({128, 2}, DType::Q4_K), {"q4_k block size 256"}));
}

TEST(HostileTensor, MisalignedOffset) {
  EXPECT_TRUE(load_fails_with(one_tensor({8}, DType::F32, 16),
                              {"tensor 'w' offset", "16 is not a multiple of the alignment 32"}));
}

TEST(HostileTensor, MisalignedForACustomAlignment) {
  ByteBuilder b;
  b.header(1, 1)
      .kv_u32("general.alignment", 64)
      .tensor("w", {8}, DType::F32, 32)
      .pad_to(64)
      .zeros(128);
  EXPECT_TRUE(load_fails_with(b.bytes, {"tensor 'w' offset", "alignment 64"}));
}

TEST(HostileTensor, DuplicateNames) {
  ByteBuilder b;
  b.header(2, 0)
      .tensor("w", {8}, DType::F32, 0)
      .tensor("w", {8}, DType::F32, 32)
      .pad_to(32)
      .zeros(64);
  EXPECT_TRUE(
      load_fails_with(b.bytes, {"tensor 'w' at offset 57", "duplicate tensor name", "offset 24"}));
}

TEST(HostileTensor, OverlappingData) {
  ByteBuilder b;
  b.header(2, 0)
      .tensor("a", {16}, DType::F32, 0)
      .tensor("b", {8}, DType::F32, 32)
      .pad_to(32)
      .zeros(128);
  EXPECT_TRUE(
      load_fails_with(b.bytes, {"tensor 'b' offset", "[32, 64) overlaps tensor 'a' [0, 64)"}));
  // Listed in the other order, the later offset is still the one reported.
  ByteBuilder c;
  c.header(2, 0)
      .tensor("b", {8}, DType::F32, 32)
      .tensor("a", {16}, DType::F32, 0)
      .pad_to(32)
      .zeros(128);
  EXPECT_TRUE(load_fails_with(c.bytes, {"tensor 'b' offset", "overlaps tensor 'a'"}));
  // Two tensors at the same offset.
  ByteBuilder d;
  d.header(2, 0)
      .tensor("a", {8}, DType::F32, 0)
      .tensor("b", {8}, DType::F32, 0)
      .pad_to(32)
      .zeros(64);
  EXPECT_TRUE(load_fails_with(d.bytes, {"tensor 'b' offset", "overlaps tensor 'a'"}));
}

TEST(HostileTensor, EmptyName) {
  ByteBuilder b;
  b.header(1, 0).tensor("", {8}, DType::F32, 0).pad_to(32).zeros(64);
  EXPECT_TRUE(load_fails_with(b.bytes, {"tensor name[0] at offset 24", "empty"}));
}

TEST(HostileTensor, NameAboveTheLimit) {
  ByteBuilder b;
  b.header(1, 0).tensor(std::string(300, 'n'), {8}, DType::F32, 0).pad_to(32).zeros(64);
  EXPECT_TRUE(load_fails_with(b.bytes, {"tensor name[0] length", "limit of 256"}));
}

TEST(HostileTensor, VocabularySizeMustMatchEmbeddingRows) {
  GgufWriter w;
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "d"});
  const std::vector<uint8_t> data(8 * 5 * 4);
  w.add_tensor("token_embd.weight", DType::F32, {8, 5}, data.data(), data.size());
  EXPECT_TRUE(load_fails_with(w.write_to_buffer(), {"tensor 'token_embd.weight' ne[1]", "5 rows",
                                                    "4 entries of tokenizer.ggml.tokens"}));
}

TEST(HostileTensor, VocabularyThatIsNotAnArray) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.tokens", "abcd");
  const std::vector<uint8_t> data(8 * 4 * 4);
  w.add_tensor("token_embd.weight", DType::F32, {8, 4}, data.data(), data.size());
  EXPECT_TRUE(
      load_fails_with(w.write_to_buffer(), {"key 'tokenizer.ggml.tokens'", "expected an array"}));
}

TEST(HostileTensor, MatchingVocabularyLoads) {
  const GgufFile f = GgufFile::from_buffer(test::small_writer().write_to_buffer(), "ok.gguf");
  EXPECT_EQ(f.tensor("token_embd.weight").ne[1], 4);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 4u);
}

}  // namespace
}  // namespace strata::gguf
