// Tensor element types with GGUF's (ggml's) numeric ids and block geometry.
// This is pure data shared by the GGUF reader (to size tensors) and the kernels
// (which attach conversion and dot-product functions in kernels/quant/traits.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  // strata-internal layouts, never read from or written to files (dtype_info(uint32_t)
  // and dtype_from_name do not know them): weights repacked at load for faster kernels,
  // and the activation layout their kernels take. See kernels/quant/blocks.h.
  Q4_0_X16 = 64,
  Q8_0_X16A = 65,
  Q8_0_X16 = 66,
  Q6_K_X16 = 67,
  Q8_K_X16A = 68,
  Q4_K_X16 = 69,
  Q5_K_X16 = 70,
  IQ4_XS_X16 = 71,
  Q3_K_X16 = 72,
  Q4_1_X16 = 73,
  Q5_0_X16 = 74,
  Q5_1_X16 = 75,
  IQ4_NL_X16 = 76,
  Q2_K_X16 = 77,
  Q4_K_X16P = 78,
  Q5_K_X16P = 79,
  IQ4_XS_X16P = 80,
  Q3_K_X16S = 81,
  Q8_0_X16AT = 82,
};

struct DTypeInfo {
  std::string_view name;
  int64_t block_size;  // elements per block (1 for plain types)
  size_t type_size;    // bytes per block
};

// Geometry of a type id read from a file; nullopt for ids strata does not know (and for
// the internal layouts).
std::optional<DTypeInfo> dtype_info(uint32_t id);

// Geometry of a known type, internal ones included (never fails for enum values listed above).
DTypeInfo dtype_info(DType t);

// Geometry of any type, file or internal; nullopt for a value that is neither (a DType
// cast from an unchecked id).
std::optional<DTypeInfo> find_dtype_info(DType t);

std::string_view dtype_name(DType t);

// Parses "f32", "q4_k", "Q8_0", ... (case-insensitive); nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace strata
