#include "core/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace strata {
namespace {

struct Entry {
  DType type;
  DTypeInfo info;
};

// Block sizes and byte sizes follow GGUF's block layouts (QK_K = 256).
constexpr std::array<Entry, 22> kTable = {{
    {DType::F32, {"f32", 1, 4}},
    {DType::F16, {"f16", 1, 2}},
    {DType::Q4_0, {"q4_0", 32, 2 + 16}},
    {DType::Q4_1, {"q4_1", 32, 2 + 2 + 16}},
    {DType::Q5_0, {"q5_0", 32, 2 + 4 + 16}},
    {DType::Q5_1, {"q5_1", 32, 2 + 2 + 4 + 16}},
    {DType::Q8_0, {"q8_0", 32, 2 + 32}},
    {DType::Q8_1, {"q8_1", 32, 4 + 32}},
    {DType::Q2_K, {"q2_k", 256, 16 + 64 + 2 + 2}},
    {DType::Q3_K, {"q3_k", 256, 32 + 64 + 12 + 2}},
    {DType::Q4_K, {"q4_k", 256, 2 + 2 + 12 + 128}},
    {DType::Q5_K, {"q5_k", 256, 2 + 2 + 12 + 32 + 128}},
    {DType::Q6_K, {"q6_k", 256, 128 + 64 + 16 + 2}},
    {DType::Q8_K, {"q8_k", 256, 4 + 256 + 32}},
    {DType::IQ4_NL, {"iq4_nl", 32, 2 + 16}},
    {DType::IQ4_XS, {"iq4_xs", 256, 2 + 2 + 4 + 128}},
    {DType::I8, {"i8", 1, 1}},
    {DType::I16, {"i16", 1, 2}},
    {DType::I32, {"i32", 1, 4}},
    {DType::I64, {"i64", 1, 8}},
    {DType::F64, {"f64", 1, 8}},
    {DType::BF16, {"bf16", 1, 2}},
}};

// Layouts that exist only in memory (core/dtype.h).
constexpr std::array<Entry, 19> kInternal = {{
    {DType::Q4_0_X16, {"q4_0_x16", 512, 16 * (2 + 16)}},
    {DType::Q8_0_X16A, {"q8_0_x16a", 512, 512 + 16 * 4 + 16 * 4}},
    {DType::Q8_0_X16, {"q8_0_x16", 512, 16 * (2 + 32)}},
    {DType::Q6_K_X16, {"q6_k_x16", 256, 128 + 64 + 16 + 2}},
    {DType::Q8_K_X16A, {"q8_k_x16a", 256, 256 + 16 * 4 + 4 + 30 * 2}},
    {DType::Q4_K_X16, {"q4_k_x16", 256, 2 + 2 + 12 + 128}},
    {DType::Q5_K_X16, {"q5_k_x16", 256, 2 + 2 + 12 + 32 + 128}},
    {DType::IQ4_XS_X16, {"iq4_xs_x16", 256, 2 + 2 + 4 + 128}},
    {DType::Q3_K_X16, {"q3_k_x16", 256, 32 + 64 + 12 + 2}},
    {DType::Q4_1_X16, {"q4_1_x16", 512, 16 * (2 + 2 + 16)}},
    {DType::Q5_0_X16, {"q5_0_x16", 512, 16 * (2 + 4 + 16)}},
    {DType::Q5_1_X16, {"q5_1_x16", 512, 16 * (2 + 2 + 4 + 16)}},
    {DType::IQ4_NL_X16, {"iq4_nl_x16", 512, 16 * (2 + 16)}},
    {DType::Q2_K_X16, {"q2_k_x16", 256, 16 + 64 + 2 + 2}},
    {DType::Q4_K_X16P, {"q4_k_x16p", 512, 2 * (2 + 2 + 12) + 256}},
    {DType::Q5_K_X16P, {"q5_k_x16p", 512, 2 * (2 + 2 + 12) + 64 + 256}},
    {DType::IQ4_XS_X16P, {"iq4_xs_x16p", 512, 2 * (2 + 2 + 4) + 256}},
    {DType::Q3_K_X16S, {"q3_k_x16s", 256, 32 + 64 + 12 + 2}},
    {DType::Q8_0_X16AT, {"q8_0_x16at", 512, 512 + 16 * 4 + 16 * 4 + 512}},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& e : kTable) {
    if (static_cast<uint32_t>(e.type) == id) return e.info;
  }
  return std::nullopt;
}

std::optional<DTypeInfo> find_dtype_info(DType t) {
  for (const auto& e : kInternal) {
    if (e.type == t) return e.info;
  }
  return dtype_info(static_cast<uint32_t>(t));
}

DTypeInfo dtype_info(DType t) {
  return *find_dtype_info(t);
}

std::string_view dtype_name(DType t) {
  return dtype_info(t).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& e : kTable) {
    if (e.info.name == lower) return e.type;
  }
  return std::nullopt;
}

}  // namespace strata
