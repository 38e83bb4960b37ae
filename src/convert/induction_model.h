// A constructed retrieval model: a 2-layer `llama` GGUF with hand-set weights whose
// answer to a needle-in-a-haystack prompt is known, so long-context attention (dense or
// sparse) can be measured for accuracy without a long-context trained model.
//
// Shape: 2 layers, 4 query heads / 2 KV heads of size 32, residual 160, 1108 tokens.
//   layer 0, KV head 0: previous-token head (writes the previous token's code)
//   layer 0, KV head 1: current-token head   (local, harmless)
//   layer 1, KV head 0: induction head       (THE retrieval head)
//   layer 1, KV head 1: previous-token head  (local, harmless)
//
// At the last token of "... K V ... K" the induction head attends to the position whose
// previous token is K (i.e. V's position, however far back) and copies V into the part
// of the residual stream that the output matrix reads, so the next token is V. Every
// other head only looks at the current or the previous position, so it works unchanged
// under streaming attention (any sink, any window >= 2). See induction_model.cpp for
// the derivation of every weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gguf/gguf.h"

namespace strata {

struct InductionModelOptions {
  std::string output_path;
  DType type = DType::F32;     // F32 or F16 matrices (norms and rope_freqs stay F32)
  uint64_t seed = 0;           // the random sign codes of the non-needle tokens
  int64_t context_length = 0;  // 0 = kInductionMaxContext; at most kInductionMaxContext
  // Cost padding (the `induction-1b` preset): `pad_layers` more layers after the two of the
  // circuit, and every layer's FFN `ffn_dim` wide, all with zero output projections, so
  // they leave the residual stream exactly as it was (the model still copies) while a
  // token reads as many weight bytes as a 1B model. Their matrices are `pad_type`.
  int64_t pad_layers = 0;
  int64_t ffn_dim = 0;  // 0: the circuit's own (tiny) FFN
  // Residual width (0: the circuit's 160). The circuit stays on its first 160 dims, the
  // rest are zero; the RMSNorm weights and epsilon are rescaled so every normalised
  // value is the 160-wide model's.
  int64_t dim = 0;
  DType pad_type = DType::Q4_0;
};

// Longest context the positional heads are proven sharp for (8 RoPE pairs with
// frequencies (pi/2)/4^k resolve every distance up to 4^8 with a margin, see the .cpp);
// also the model's context length unless --ctx asks for less.
inline constexpr int64_t kInductionMaxContext = 65536;

// Metadata keys written into the model.
inline constexpr const char* kInductionRetrievalHeadsKey = "strata.induction.retrieval_heads";
inline constexpr const char* kInductionHeadRolesKey = "strata.induction.head_roles";
inline constexpr const char* kInductionNeedleTokensKey = "strata.induction.needle_tokens";
inline constexpr const char* kInductionFillerTokensKey = "strata.induction.filler_tokens";

// Shape and ground truth of the constructed model.
struct InductionModelInfo {
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_vocab = 0;
  int64_t retrieval_layer = 0;
  int64_t retrieval_kv_head = 0;
  std::vector<std::string> head_roles;  // [layer * n_kv_heads + kv_head]
  std::vector<int32_t> needle_tokens;   // K and V are drawn from these
  std::vector<int32_t> filler_tokens;   // the haystack is drawn from these (disjoint)
  int32_t bos = 1;
};
const InductionModelInfo& induction_model_info();

// Builds the model in memory (throws strata::Error on a bad option).
gguf::GgufWriter build_induction_model(const InductionModelOptions& options);
// Builds it and writes options.output_path.
void make_induction_model(const InductionModelOptions& options);

// The ground-truth head map: the retrieval head "full" (score 1), every other KV head
// "streaming" (score 0), one inner list per layer:
// {"sink": S, "window": W, "modes": [[...], ...], "scores": [[...], ...]}
std::string induction_head_map_json(int64_t sink = 4, int64_t window = 64);

// Self-check of the positional heads with the forward pass's own f32 RoPE arithmetic:
// for query positions spread over [0, context_length), the smallest softmax weight that
// the previous-token head puts on p-1 and the current-token head puts on p. The builder
// refuses to write a model for which this is below 1 - 1e-6.
double induction_positional_min_weight(int64_t context_length);

}  // namespace strata
