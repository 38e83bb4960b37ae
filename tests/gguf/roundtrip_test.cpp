// Writer -> reader round trips: every value type, nested arrays, several tensor types,
// a non-default alignment, lazily filled tensors, and files on disk.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::pattern_bytes;

struct TensorSpec {
  std::string name;
  DType type;
  std::vector<int64_t> ne;
  std::vector<uint8_t> data;
};

std::vector<TensorSpec> tensor_specs() {
  auto spec = [](std::string name, DType type, std::vector<int64_t> ne, uint32_t seed) {
    const DTypeInfo info = dtype_info(type);
    uint64_t blocks = static_cast<uint64_t>(ne[0] / info.block_size);
    for (size_t d = 1; d < ne.size(); ++d) blocks *= static_cast<uint64_t>(ne[d]);
    return TensorSpec{std::move(name), type, std::move(ne),
                      pattern_bytes(blocks * info.type_size, seed)};
  };
  return {
      spec("f32.1d", DType::F32, {7}, 1),          spec("f16.2d", DType::F16, {5, 3}, 2),
      spec("q4_0.3d", DType::Q4_0, {64, 2, 3}, 3), spec("q8_0.2d", DType::Q8_0, {32, 5}, 4),
      spec("q4_k.2d", DType::Q4_K, {256, 2}, 5),   spec("q6_k.4d", DType::Q6_K, {256, 1, 2, 1}, 6),
      spec("i32.1d", DType::I32, {3}, 7),          spec("bf16.1d", DType::BF16, {9}, 8),
  };
}

// One key per value type, arrays of every element type, and nested arrays.
std::vector<std::pair<std::string, Value>> all_values() {
  using VT = ValueType;
  std::vector<std::pair<std::string, Value>> kv = {
      {"t.u8", Value::make_uint(VT::U8, 255)},
      {"t.i8", Value::make_int(VT::I8, -128)},
      {"t.u16", Value::make_uint(VT::U16, 65535)},
      {"t.i16", Value::make_int(VT::I16, -32768)},
      {"t.u32", Value::make_uint(VT::U32, 4000000000u)},
      {"t.i32", Value::make_int(VT::I32, -2000000000)},
      {"t.f32", Value::make_float(VT::F32, 0.1)},
      {"t.bool", Value::make_bool(true)},
      {"t.string", Value::make_string(std::string("h\xc3\xa9llo\n\0world", 13))},
      {"t.empty_string", Value::make_string("")},
      {"t.u64", Value::make_uint(VT::U64, std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::make_int(VT::I64, std::numeric_limits<int64_t>::min())},
      {"t.f64", Value::make_float(VT::F64, -1.0 / 3.0)},
      {"a.u8", Value::make_array(Array::of_uints(VT::U8, {0, 1, 255}))},
      {"a.i8", Value::make_array(Array::of_ints(VT::I8, {-128, 0, 127}))},
      {"a.u16", Value::make_array(Array::of_uints(VT::U16, {65535}))},
      {"a.i16", Value::make_array(Array::of_ints(VT::I16, {-5, 5}))},
      {"a.u32", Value::make_array(Array::of_uints(VT::U32, {1, 2, 3}))},
      {"a.i32", Value::make_array(Array::of_i32({-1, 2, -3}))},
      {"a.f32", Value::make_array(Array::of_f32({1.5f, -0.25f}))},
      {"a.bool", Value::make_array(Array::of_uints(VT::BOOL, {1, 0, 1}))},
      {"a.string", Value::make_array(Array::of_strings({"a", "", "ccc"}))},
      {"a.u64", Value::make_array(Array::of_uints(VT::U64, {1ull << 63}))},
      {"a.i64", Value::make_array(Array::of_ints(VT::I64, {-(1ll << 62)}))},
      {"a.f64", Value::make_array(Array::of_floats(VT::F64, {1e300, -0.0}))},
      {"a.empty", Value::make_array(Array::of_strings({}))},
  };
  // [[1, 2], ["x"], []] and a three-level [[[7]]].
  kv.emplace_back("a.nested", Value::make_array(
                                  Array::of_arrays({Array::of_i32({1, 2}), Array::of_strings({"x"}),
                                                    Array::of_floats(VT::F64, {})})));
  kv.emplace_back(
      "a.nested3",
      Value::make_array(Array::of_arrays({Array::of_arrays({Array::of_uints(VT::U8, {7})})})));
  return kv;
}

GgufWriter full_writer(uint32_t alignment) {
  GgufWriter w;
  w.set_u32("general.alignment", alignment);
  for (const auto& [k, v] : all_values()) w.set_value(k, v);
  for (const auto& t : tensor_specs())
    w.add_tensor(t.name, t.type, t.ne, t.data.data(), t.data.size());
  return w;
}

void expect_matches_specs(const GgufFile& f, uint32_t alignment) {
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);

  const auto expected_kv = all_values();
  ASSERT_EQ(f.metadata().size(), expected_kv.size() + 1);
  EXPECT_EQ(f.metadata()[0].first, "general.alignment");
  for (size_t i = 0; i < expected_kv.size(); ++i) {
    EXPECT_EQ(f.metadata()[i + 1].first, expected_kv[i].first);
    EXPECT_TRUE(f.metadata()[i + 1].second == expected_kv[i].second)
        << expected_kv[i].first << ": " << f.metadata()[i + 1].second.to_display();
  }

  const auto specs = tensor_specs();
  ASSERT_EQ(f.tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    EXPECT_EQ(t.ne, specs[i].ne);
    EXPECT_EQ(t.n_bytes, specs[i].data.size());
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    EXPECT_EQ(&f.tensor(t.name), &t);
    const auto bytes = f.tensor_bytes(t);
    ASSERT_EQ(bytes.size(), specs[i].data.size());
    EXPECT_EQ(std::memcmp(bytes.data(), specs[i].data.data(), bytes.size()), 0) << t.name;
    EXPECT_EQ(f.tensor_data(t), bytes.data());
  }
}

class RoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RoundTrip, Buffer) {
  const uint32_t alignment = GetParam();
  const GgufFile f = GgufFile::from_buffer(full_writer(alignment).write_to_buffer(), "rt.gguf");
  EXPECT_EQ(f.name(), "rt.gguf");
  expect_matches_specs(f, alignment);
}

TEST_P(RoundTrip, FileOnDisk) {
  const uint32_t alignment = GetParam();
  const std::string path =
      ::testing::TempDir() + "strata_gguf_rt_" + std::to_string(alignment) + ".gguf";
  full_writer(alignment).write(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  {
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.file_size(), std::filesystem::file_size(path));
    expect_matches_specs(f, alignment);
  }
  {  // read into huge-page memory instead of mapped: the same file
    const GgufFile f = GgufFile::read(path);
    EXPECT_EQ(f.file_size(), std::filesystem::file_size(path));
    expect_matches_specs(f, alignment);
  }
  std::filesystem::remove(path);
}

TEST(RoundTrip, ReadRejectsWhatOpenRejects) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(GgufFile::read(dir + "strata_gguf_missing.gguf"), Error);
  EXPECT_THROW(GgufFile::read(dir), Error);  // a directory
  const std::string empty = dir + "strata_gguf_empty.gguf";
  std::FILE* fp = std::fopen(empty.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  std::fclose(fp);
  EXPECT_THROW(GgufFile::read(empty), Error);
  std::filesystem::remove(empty);
}

INSTANTIATE_TEST_SUITE_P(Alignments, RoundTrip, ::testing::Values(32u, 64u, 8u, 4096u));

TEST(RoundTrip, FileIsWrittenIdenticallyFromBufferAndDisk) {
  const GgufWriter w = full_writer(64);
  const std::string path = ::testing::TempDir() + "strata_gguf_same.gguf";
  w.write(path);
  std::vector<uint8_t> disk(std::filesystem::file_size(path));
  std::FILE* fp = std::fopen(path.c_str(), "rb");
  ASSERT_NE(fp, nullptr);
  ASSERT_EQ(std::fread(disk.data(), 1, disk.size(), fp), disk.size());
  std::fclose(fp);
  std::filesystem::remove(path);
  EXPECT_EQ(disk, w.write_to_buffer());
}

TEST(RoundTrip, LazyTensorsAreFilledAtWrite) {
  GgufWriter w;
  int calls = 0;
  w.add_tensor_lazy("lazy", DType::F32, {4, 2}, [&](uint8_t* dst) {
    ++calls;
    const float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    std::memcpy(dst, v, sizeof(v));
  });
  EXPECT_EQ(calls, 0);
  const GgufFile f = GgufFile::from_buffer(w.write_to_buffer(), "lazy.gguf");
  EXPECT_EQ(calls, 1);
  float got[8];
  std::memcpy(got, f.tensor_data(f.tensor("lazy")), sizeof(got));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], static_cast<float>(i));
}

TEST(RoundTrip, FailingFillLeavesNoFile) {
  GgufWriter w;
  w.add_tensor_lazy("bad", DType::F32, {4}, [](uint8_t*) { throw Error("generator failed"); });
  const std::string path = ::testing::TempDir() + "strata_gguf_fail.gguf";
  EXPECT_THROW(w.write(path), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(RoundTrip, VersionTwoReadsLikeThree) {
  auto bytes = test::small_writer().write_to_buffer();
  bytes[4] = 2;
  const GgufFile f = GgufFile::from_buffer(bytes, "v2.gguf");
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get_uint("llama.block_count"), 2u);
}

TEST(RoundTrip, NoTensorsMeansNoPadding) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  const auto bytes = w.write_to_buffer();
  EXPECT_EQ(bytes.size(), 24u + 8 + 20 + 4 + 8 + 5);
  const GgufFile f = GgufFile::from_buffer(bytes, "vocab.gguf");
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
}

TEST(RoundTrip, MovedFileKeepsItsData) {
  GgufFile a = GgufFile::from_buffer(test::small_writer().write_to_buffer(), "a.gguf");
  const uint8_t* p = a.tensor_data(a.tensor("token_embd.weight"));
  GgufFile b = std::move(a);
  EXPECT_EQ(b.tensor_data(b.tensor("token_embd.weight")), p);
  GgufFile c = GgufFile::from_buffer(test::small_writer().write_to_buffer(), "c.gguf");
  c = std::move(b);
  EXPECT_EQ(c.name(), "a.gguf");
  EXPECT_EQ(c.tensor_data(c.tensor("token_embd.weight")), p);
}

TEST(Writer, SettingAKeyAgainKeepsItsPosition) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_u32("c", 3);
  w.set_string("b", "replaced");
  const GgufFile f = GgufFile::from_buffer(w.write_to_buffer(), "kv.gguf");
  ASSERT_EQ(f.metadata().size(), 3u);
  EXPECT_EQ(f.metadata()[1].first, "b");
  EXPECT_EQ(f.get_string("b"), "replaced");
}

TEST(Writer, CopiesValuesFromAnotherFile) {
  const GgufFile src = GgufFile::from_buffer(test::small_writer().write_to_buffer(), "src.gguf");
  GgufWriter w;
  for (const auto& [k, v] : src.metadata()) w.set_value(k, v);
  const GgufFile copy = GgufFile::from_buffer(w.write_to_buffer(), "copy.gguf");
  EXPECT_EQ(copy.metadata(), src.metadata());
}

TEST(Writer, RejectsInvalidTensors) {
  GgufWriter w;
  const std::vector<uint8_t> data(1024);
  w.add_tensor("t", DType::F32, {4}, data.data(), 16);
  EXPECT_THROW(w.add_tensor("t", DType::F32, {4}, data.data(), 16), Error);    // duplicate
  EXPECT_THROW(w.add_tensor("u", DType::F32, {4}, data.data(), 15), Error);    // size
  EXPECT_THROW(w.add_tensor("u", DType::Q4_0, {33}, data.data(), 18), Error);  // row length
  EXPECT_THROW(w.add_tensor("u", DType::F32, {1, 1, 1, 1, 1}, data.data(), 4), Error);  // n_dims
  EXPECT_THROW(w.add_tensor("u", DType::F32, {}, data.data(), 4), Error);
  EXPECT_THROW(w.add_tensor("u", DType::F32, {0}, data.data(), 0), Error);
  EXPECT_THROW(w.add_tensor("u", DType::F32, {-4}, data.data(), 16), Error);
  EXPECT_THROW(w.add_tensor("", DType::F32, {4}, data.data(), 16), Error);
  EXPECT_THROW(w.add_tensor("u", static_cast<DType>(99), {4}, data.data(), 16), Error);
  EXPECT_THROW(w.add_tensor("u", DType::F32, {1ll << 40, 1ll << 40}, data.data(), 16), Error);
  EXPECT_THROW(w.add_tensor_lazy("u", DType::F32, {4}, nullptr), Error);
  try {
    w.add_tensor("u", DType::Q4_0, {33}, data.data(), 18);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block size 32"), std::string::npos) << e.what();
  }
}

TEST(Writer, RejectsInvalidMetadata) {
  GgufWriter w;
  EXPECT_THROW(w.set_u32("", 1), Error);
  EXPECT_THROW(w.set_u32("general.alignment", 24), Error);
  EXPECT_THROW(w.set_u32("general.alignment", 0), Error);
  EXPECT_THROW(w.set_u64("general.alignment", 32), Error);
  EXPECT_NO_THROW(w.set_u32("general.alignment", 16));
  EXPECT_THROW(w.set_value("k", Value{ValueType::U8, uint64_t{300}}), Error);
  EXPECT_THROW(w.set_value("k", Value{ValueType::STRING, uint64_t{1}}), Error);
  EXPECT_THROW(w.set_value("k", Value{ValueType::ARRAY, std::shared_ptr<const Array>()}), Error);
  EXPECT_THROW(w.set_value("k", Value{static_cast<ValueType>(13), uint64_t{1}}), Error);
  Array deep = Array::of_i32({1});
  for (int i = 1; i < kMaxArrayDepth; ++i) deep = Array::of_arrays({deep});
  EXPECT_NO_THROW(w.set_value("deep", Value::make_array(deep)));
  EXPECT_THROW(w.set_value("deeper", Value::make_array(Array::of_arrays({deep}))), Error);
  EXPECT_FALSE(w.has("k"));
  EXPECT_TRUE(w.has("deep"));
}

}  // namespace
}  // namespace strata::gguf
