// Re-encodes a GGUF model's weight matrices in another element type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/weighted_quant.h"
#include "core/dtype.h"
#include "gguf/gguf.h"

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

// What `strata quantize --type` asks for: one type for every matrix, or an _M mix
// (q3_k_m, q4_k_m, q5_k_m) that gives some tensors more bits, as llama.cpp's do.
struct QuantScheme {
  DType type;
  bool mixed = false;
};

// "q5_k", "Q4_K_M", "iq4_xs", ...; nullopt for unknown names, mixes other than the three
// above, and the activation-only types.
std::optional<QuantScheme> parse_quant_scheme(std::string_view name);

// The type an _M mix based on `base` gives tensor `name` of a model with `n_layers` layers
// (llama.cpp's recipe): Q4_K_M / Q5_K_M give attn_v and ffn_down Q6_K in the first and last
// eighth of the layers and every third one between; Q3_K_M gives attn_v Q5_K (first two
// layers) or Q4_K, ffn_down Q5_K / Q4_K / Q3_K by layer, attn_output Q4_K.
DType mixed_tensor_type(const std::string& name, int64_t n_layers, DType base);

class Imatrix;

// Everything `strata quantize` can ask for beyond --type.
struct QuantizeOptions {
  QuantScheme scheme{DType::Q8_0, false};
  // Per-tensor types that override the scheme (a --target-bpw plan, or the one tensor a
  // sensitivity probe quantizes). Each must divide the tensor's rows into blocks.
  std::map<std::string, DType> tensor_types;
  // Tensors not in tensor_types keep their source type (sensitivity probes).
  bool keep_others = false;
  // Per-column importance (--calib / --imatrix): weights the scale search's error.
  const Imatrix* imatrix = nullptr;
  // The weighted scale search (convert/weighted_quant.h) for the types that have one; on
  // whenever imatrix is set. Off: the plain quantizers (kernels' from_float).
  bool search = false;
  OutlierPolicy outliers = OutlierPolicy::clip;
};

// The type each tensor of `in` gets under `options` (1-D tensors stay f32).
std::map<std::string, DType> planned_types(const gguf::GgufFile& in,
                                           const QuantizeOptions& options);

// Tensor `name` of `in` re-encoded as `type` under `options`' importance, search and
// outlier settings, exactly the bytes quantize_to_buffer would give it (for probes that
// swap one tensor of a loaded model).
std::vector<uint8_t> quantize_tensor(const gguf::GgufFile& in, const std::string& name, DType type,
                                     const QuantizeOptions& options);

// The quantized model as GGUF bytes (for in-memory probes), or written to a file.
std::vector<uint8_t> quantize_to_buffer(const gguf::GgufFile& in, const QuantizeOptions& options);
void quantize_model(const std::string& in_path, const std::string& out_path,
                    const QuantizeOptions& options);

// The tensor that multiplies the final hidden state: output.weight, or token_embd.weight
// when the classifier is tied to the embedding.
std::string classifier_name(const gguf::GgufFile& in);

void quantize_model(const std::string& in_path, const std::string& out_path, DType target);
void quantize_model(const std::string& in_path, const std::string& out_path,
                    const QuantScheme& scheme);

}  // namespace strata
