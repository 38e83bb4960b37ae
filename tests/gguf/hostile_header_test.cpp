// Malformed headers and metadata: each must be rejected with a strata::Error that names
// the file, the field and its offset.

#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::ByteBuilder;
using test::load_fails_with;

constexpr uint32_t id(ValueType t) {
  return static_cast<uint32_t>(t);
}

// Header with one key named 'a' of type `type`; the test appends the payload.
ByteBuilder one_key(uint32_t type) {
  ByteBuilder b;
  b.header(0, 1).str("a").u32(type);
  return b;
}

// A key 'a' holding `depth` nested arrays around a single u8.
std::vector<uint8_t> nested_arrays(int depth) {
  ByteBuilder b = one_key(id(ValueType::ARRAY));
  for (int d = 1; d < depth; ++d) b.u32(id(ValueType::ARRAY)).u64(1);
  b.u32(id(ValueType::U8)).u64(1).u8(7);
  return b.bytes;
}

TEST(HostileHeader, EmptyAndTinyFiles) {
  EXPECT_TRUE(load_fails_with({}, {"magic at offset 0", "0 bytes"}));
  EXPECT_TRUE(load_fails_with({'G', 'G', 'U'}, {"magic at offset 0", "3 bytes"}));
}

TEST(HostileHeader, BadMagic) {
  auto bytes = test::small_writer().write_to_buffer();
  bytes[3] = 'X';
  EXPECT_TRUE(load_fails_with(bytes, {"magic at offset 0", "47 47 55 58"}));
}

TEST(HostileHeader, VersionOneIsRejected) {
  auto bytes = test::small_writer().write_to_buffer();
  bytes[4] = 1;
  EXPECT_TRUE(load_fails_with(bytes, {"version at offset 4", "version 1"}));
}

TEST(HostileHeader, UnknownVersionIsRejected) {
  auto bytes = test::small_writer().write_to_buffer();
  bytes[4] = 99;
  EXPECT_TRUE(load_fails_with(bytes, {"version at offset 4", "99"}));
}

TEST(HostileHeader, BigEndianIsRejected) {
  auto bytes = test::small_writer().write_to_buffer();
  test::poke<uint32_t>(bytes, 4, 0x03000000);
  EXPECT_TRUE(load_fails_with(bytes, {"version", "big-endian"}));
}

TEST(HostileHeader, HugeKeyCount) {
  ByteBuilder b;
  b.header(0, uint64_t{1} << 60).zeros(64);
  EXPECT_TRUE(load_fails_with(b.bytes, {"metadata_kv_count at offset 16", "limit"}));
}

TEST(HostileHeader, KeyCountBeyondTheFile) {
  ByteBuilder b;
  b.header(0, 1000).zeros(100);
  EXPECT_TRUE(load_fails_with(b.bytes, {"metadata_kv_count at offset 16", "cannot fit"}));
}

TEST(HostileHeader, HugeTensorCount) {
  ByteBuilder b;
  b.header(uint64_t{1} << 40, 0).zeros(64);
  EXPECT_TRUE(load_fails_with(b.bytes, {"tensor_count at offset 8", "limit"}));
}

TEST(HostileHeader, TensorCountBeyondTheFile) {
  ByteBuilder b;
  b.header(100, 0).zeros(64);
  EXPECT_TRUE(load_fails_with(b.bytes, {"tensor_count at offset 8", "cannot fit"}));
}

TEST(HostileMetadata, EmptyKey) {
  ByteBuilder b;
  b.header(0, 1).str("").u32(id(ValueType::U32)).u32(1);
  EXPECT_TRUE(load_fails_with(b.bytes, {"metadata key[0] at offset 24", "empty"}));
}

TEST(HostileMetadata, KeyLengthAboveTheLimit) {
  ByteBuilder b;
  b.header(0, 1).u64(uint64_t{1} << 62).zeros(32);
  EXPECT_TRUE(load_fails_with(b.bytes, {"metadata key[0] length at offset 24", "limit of 65535"}));
}

TEST(HostileMetadata, KeyLongerThanTheFile) {
  ByteBuilder b;
  b.header(0, 1).u64(1000).raw("abcdefghijklmnop", 16);
  EXPECT_TRUE(load_fails_with(b.bytes, {"metadata key[0] length", "1000", "16 bytes left"}));
}

TEST(HostileMetadata, StringLongerThanTheFile) {
  ByteBuilder b = one_key(id(ValueType::STRING));
  b.u64(5000).raw("hello", 5);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' length at offset 37", "5000"}));
}

TEST(HostileMetadata, StringAboveTheLimit) {
  ByteBuilder b = one_key(id(ValueType::STRING));
  b.u64((uint64_t{1} << 30) + 1).raw("hello", 5);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' length", "limit of 1073741824"}));
}

TEST(HostileMetadata, UnknownValueType) {
  ByteBuilder b = one_key(13);
  b.u32(0);
  EXPECT_TRUE(
      load_fails_with(b.bytes, {"key 'a' value type at offset 33", "unknown value type 13"}));
}

TEST(HostileMetadata, UnknownArrayElementType) {
  ByteBuilder b = one_key(id(ValueType::ARRAY));
  b.u32(42).u64(0);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' element type", "42"}));
}

TEST(HostileMetadata, HugeArrayLength) {
  ByteBuilder b = one_key(id(ValueType::ARRAY));
  b.u32(id(ValueType::U32)).u64(uint64_t{1} << 62).zeros(16);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' array length at offset 41", "cannot fit"}));
}

TEST(HostileMetadata, ArrayLengthWhoseByteSizeOverflows) {
  // 2^64-1 strings of at least 8 bytes: count * 8 would overflow.
  for (ValueType t : {ValueType::STRING, ValueType::U64, ValueType::ARRAY}) {
    ByteBuilder b = one_key(id(ValueType::ARRAY));
    b.u32(id(t)).u64(~uint64_t{0}).zeros(64);
    EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' array length", "cannot fit"}));
  }
}

TEST(HostileMetadata, ArrayStringElementPastTheEnd) {
  ByteBuilder b = one_key(id(ValueType::ARRAY));
  b.u32(id(ValueType::STRING)).u64(2).str("ok").u64(99).raw("x", 1);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a'[1] length", "99"}));
}

TEST(HostileMetadata, TruncatedScalar) {
  ByteBuilder b = one_key(id(ValueType::U64));
  b.u32(1);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' at offset 37", "needs 8 bytes"}));
}

TEST(HostileMetadata, BoolOtherThanZeroOrOne) {
  ByteBuilder b = one_key(id(ValueType::BOOL));
  b.u8(2);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' at offset 37", "bool value 2"}));
}

TEST(HostileMetadata, ArraysNestedTooDeep) {
  EXPECT_NO_THROW(GgufFile::from_buffer(nested_arrays(kMaxArrayDepth), "deep.gguf"));
  EXPECT_TRUE(
      load_fails_with(nested_arrays(kMaxArrayDepth + 1), {"key 'a'[0][0]", "nest deeper than 8"}));
  EXPECT_TRUE(load_fails_with(nested_arrays(1000), {"nest deeper than 8"}));
}

TEST(HostileMetadata, DuplicateKeys) {
  ByteBuilder b;
  b.header(0, 2).kv_u32("a", 1).kv_u32("a", 2);
  EXPECT_TRUE(load_fails_with(b.bytes, {"key 'a' at offset 41", "duplicate key", "offset 37"}));
}

TEST(HostileMetadata, AlignmentNotAPowerOfTwo) {
  ByteBuilder b;
  b.header(0, 1).kv_u32("general.alignment", 24);
  EXPECT_TRUE(load_fails_with(
      b.bytes, {"key 'general.alignment' at offset", "24 is not a nonzero power of two"}));
}

TEST(HostileMetadata, AlignmentZero) {
  ByteBuilder b;
  b.header(0, 1).kv_u32("general.alignment", 0);
  EXPECT_TRUE(load_fails_with(b.bytes, {"general.alignment", "0 is not a nonzero power of two"}));
}

TEST(HostileMetadata, AlignmentOfTheWrongType) {
  ByteBuilder b;
  b.header(0, 1).str("general.alignment").u32(id(ValueType::U64)).u64(32);
  EXPECT_TRUE(load_fails_with(b.bytes, {"general.alignment", "has type u64, expected u32"}));
}

}  // namespace
}  // namespace strata::gguf
