// Value conversions and GgufFile's typed getters.

#include <gtest/gtest.h>

#include <limits>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

using VT = ValueType;

// Expects `fn` to throw strata::Error whose message contains `part`.
template <class Fn>
void expect_error(Fn fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Value, FactoriesRangeCheck) {
  EXPECT_NO_THROW(Value::make_uint(VT::U8, 255));
  EXPECT_THROW(Value::make_uint(VT::U8, 256), Error);
  EXPECT_THROW(Value::make_uint(VT::U16, 65536), Error);
  EXPECT_THROW(Value::make_uint(VT::I32, 1), Error);
  EXPECT_THROW(Value::make_int(VT::I8, 128), Error);
  EXPECT_THROW(Value::make_int(VT::I32, int64_t{1} << 31), Error);
  EXPECT_THROW(Value::make_int(VT::U32, 1), Error);
  EXPECT_THROW(Value::make_float(VT::F32, 1e300), Error);
  EXPECT_NO_THROW(Value::make_float(VT::F32, std::numeric_limits<double>::infinity()));
  EXPECT_THROW(Value::make_float(VT::I32, 1.0), Error);
  EXPECT_THROW(Array::of_uints(VT::U8, {1, 256}), Error);
  EXPECT_THROW(Array::of_uints(VT::BOOL, {2}), Error);
  EXPECT_THROW(Array::of_ints(VT::U8, {1}), Error);
  EXPECT_THROW(Array::of_floats(VT::F32, {1e300}), Error);
}

TEST(Value, Conversions) {
  const Value neg = Value::make_int(VT::I32, -5);
  EXPECT_FALSE(neg.as_uint());
  EXPECT_EQ(neg.as_int(), -5);
  EXPECT_EQ(neg.as_float(), -5.0);
  EXPECT_FALSE(neg.as_bool());
  EXPECT_EQ(neg.as_string(), nullptr);

  const Value big = Value::make_uint(VT::U64, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(big.as_uint(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(big.as_int());

  const Value f = Value::make_float(VT::F32, 0.5);
  EXPECT_FALSE(f.as_uint());
  EXPECT_FALSE(f.as_int());
  EXPECT_EQ(f.as_float(), 0.5);

  const Value s = Value::make_string("hi");
  ASSERT_NE(s.as_string(), nullptr);
  EXPECT_EQ(*s.as_string(), "hi");
  EXPECT_FALSE(s.as_float());
  EXPECT_EQ(s.as_array(), nullptr);
}

TEST(Value, ArrayAccessAndDisplay) {
  const Value v = Value::make_array(Array::of_strings({"a", "b", "c"}));
  const Array* a = v.as_array();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->size(), 3u);
  EXPECT_EQ(a->at(1), Value::make_string("b"));
  EXPECT_THROW(a->at(3), Error);
  ASSERT_NE(a->strings(), nullptr);
  EXPECT_EQ(a->ints(), nullptr);
  EXPECT_EQ(v.to_display(2), "[\"a\", \"b\", ...] (3 x string)");

  const Array bools = Array::of_uints(VT::BOOL, {1, 0});
  EXPECT_EQ(bools.at(0), Value::make_bool(true));
  EXPECT_EQ(Value::make_int(VT::I16, -7).to_display(), "-7");
  EXPECT_EQ(Value::make_bool(false).to_display(), "false");

  // Copies share the array storage instead of duplicating it.
  const Value copy = v;
  EXPECT_EQ(copy.as_array(), v.as_array());
}

GgufFile getters_file() {
  GgufWriter w;
  w.set_string("s", "text");
  w.set_u32("u", 7);
  w.set_i32("neg", -3);
  w.set_u64("huge", std::numeric_limits<uint64_t>::max());
  w.set_f32("f", 2.5f);
  w.set_bool("b", true);
  w.set_string_array("strs", {"x", "y"});
  w.set_f32_array("floats", {1.0f, -2.0f});
  w.set_i32_array("ints", {4, -5});
  w.set_value("u8s", Value::make_array(Array::of_uints(VT::U8, {1, 2})));
  w.set_value("big_u64s", Value::make_array(Array::of_uints(VT::U64, {1ull << 63})));
  w.set_value("bools", Value::make_array(Array::of_uints(VT::BOOL, {1})));
  w.set_value("f64s", Value::make_array(Array::of_floats(VT::F64, {1e300})));
  return GgufFile::from_buffer(w.write_to_buffer(), "getters.gguf");
}

TEST(Getters, ReturnValuesOfCompatibleTypes) {
  const GgufFile f = getters_file();
  EXPECT_TRUE(f.has("s"));
  EXPECT_FALSE(f.has("missing"));
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.get_string("s"), "text");
  EXPECT_EQ(f.get_uint("u"), 7u);
  EXPECT_EQ(f.get_int("u"), 7);
  EXPECT_EQ(f.get_int("neg"), -3);
  EXPECT_EQ(f.get_uint("huge"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.get_float("f"), 2.5);
  EXPECT_EQ(f.get_float("neg"), -3.0);
  EXPECT_TRUE(f.get_bool("b"));
  EXPECT_EQ(f.get_string_array("strs"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f.get_float_array("floats"), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.get_float_array("ints"), (std::vector<float>{4.0f, -5.0f}));
  EXPECT_EQ(f.get_int_array("ints"), (std::vector<int64_t>{4, -5}));
  EXPECT_EQ(f.get_int_array("u8s"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.get_array("strs").strings()->size(), 2u);
}

TEST(Getters, FallbacksApplyOnlyWhenMissing) {
  const GgufFile f = getters_file();
  EXPECT_EQ(f.get_string("missing", "dflt"), "dflt");
  EXPECT_EQ(f.get_uint("missing", 9), 9u);
  EXPECT_EQ(f.get_int("missing", -9), -9);
  EXPECT_EQ(f.get_float("missing", 0.25), 0.25);
  EXPECT_FALSE(f.get_bool("missing", false));
  EXPECT_EQ(f.get_uint("u", 9), 7u);
  EXPECT_EQ(f.get_string("s", "dflt"), "text");
  // A present key of the wrong type is an error even with a fallback.
  expect_error([&] { f.get_uint("s", 1); }, "key 's'");
  expect_error([&] { f.get_string("u", "x"); }, "expected string");
}

TEST(Getters, ErrorsNameTheKeyAndTheProblem) {
  const GgufFile f = getters_file();
  expect_error([&] { f.get_string("missing"); }, "getters.gguf: key 'missing'");
  expect_error([&] { f.get_string("missing"); }, "not found");
  expect_error([&] { f.get_uint("neg"); }, "negative");
  expect_error([&] { f.get_int("huge"); }, "does not fit in int64");
  expect_error([&] { f.get_float("s"); }, "has type string");
  expect_error([&] { f.get_bool("u"); }, "has type u32, expected bool");
  expect_error([&] { f.get_string_array("ints"); }, "array of i32");
  expect_error([&] { f.get_string_array("s"); }, "expected an array");
  expect_error([&] { f.get_float_array("strs"); }, "key 'strs'");
  expect_error([&] { f.get_float_array("bools"); }, "array of bool");
  expect_error([&] { f.get_float_array("f64s"); }, "does not fit in float");
  expect_error([&] { f.get_int_array("floats"); }, "array of f32");
  expect_error([&] { f.get_int_array("big_u64s"); }, "does not fit in int64");
  expect_error([&] { f.get_uint("u8s"); }, "at offset");
  expect_error([&] { f.tensor("nope"); }, "getters.gguf: tensor 'nope' not found");
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

TEST(Getters, TensorDataRejectsForeignTensorInfo) {
  const GgufFile f = getters_file();
  const TensorInfo foreign{"x", {4}, DType::F32, 1ull << 40, 4, 16};
  expect_error([&] { f.tensor_data(foreign); }, "tensor 'x'");
}

}  // namespace
}  // namespace strata::gguf
