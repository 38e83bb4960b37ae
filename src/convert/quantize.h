// Re-encodes a GGUF model's weight matrices in another element type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata {

// llama.cpp's `general.file_type` value for a model whose matrices are mostly `type`.
uint32_t file_type_for(DType type);

// The type the classifier (output matrix, or the embedding when tied) gets when a
// model is quantized to `target`: one step more precise, because it is the matrix whose
// errors reach the logits directly (llama.cpp's mixes give it Q6_K for the same reason).
// Q8_0 goes to F16: on aidreams260K, whose vocabulary shares the tied embedding,
// Q8_0 classifier error alone flips a greedy choice whose top-2 margin is 0.005.
DType classifier_type(DType target);

// The type a tensor of shape `ne` gets when the model is quantized to `target`: 1-D
// tensors stay f32; rows that do not divide into the target's blocks fall back to q8_0
// (or f32 when they do not divide into 32 either).
DType choose_tensor_type(const std::vector<int64_t>& ne, DType target, bool is_classifier);

// Converts `rows` rows of `cols` f32 values to `type`; returns the encoded bytes.
std::vector<uint8_t> encode_rows(const float* src, int64_t rows, int64_t cols, DType type);

void quantize_model(const std::string& in_path, const std::string& out_path, DType target);

}  // namespace strata
