// Re-encodes a GGUF model's weight matrices in another element type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata {

// llama.cpp's `general.file_type` value for a model whose matrices are mostly `type`.
uint32_t file_type_for(DType type);

// The type a matrix named `name` with rows of `row_len` elements gets when the model
// is quantized to `target`: 1-D tensors stay f32; rows that do not divide into the
// target's blocks fall back to q8_0 (or f32); with q4_k the classifier gets q6_k, as in
// llama.cpp's mixes, because it is the most quantization-sensitive matrix.
DType choose_tensor_type(const std::string& name, const std::vector<int64_t>& ne, DType target);

// Converts `rows` rows of `cols` f32 values to `type`; returns the encoded bytes.
std::vector<uint8_t> encode_rows(const float* src, int64_t rows, int64_t cols, DType type);

void quantize_model(const std::string& in_path, const std::string& out_path, DType target);

}  // namespace strata
