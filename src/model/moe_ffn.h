// The mixture-of-experts FFN of one layer: router, top-k, and the chosen experts' SwiGLU
// FFNs read in place from the 3-D expert tensors, plus an optional shared expert.
// A batch's tokens are grouped by expert, so each chosen expert's weights stream once
// per step for all of its tokens (a decode step reads only its k experts' rows).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "model/config.h"
#include "model/weights.h"

namespace strata {

struct ExpertChoice {
  int32_t expert = 0;
  float weight = 0.0f;
};

// One token's routing: probabilities from the router logits (softmax or sigmoid), the
// k most probable experts (by probability plus `bias` where given, which only selects;
// ties go to the lower expert id), their probabilities as weights, divided by their sum
// if norm_weights, times weights_scale. `probs` is scratch of n_experts floats; `out`
// receives n_experts_used choices, best first.
void route_token(const MoeConfig& moe, const float* logits, const float* bias, float* probs,
                 ExpertChoice* out);

// Tokens routed to each expert of each MoE layer since load, for imbalance metrics.
class ExpertLoad {
 public:
  void reset(int64_t n_layers, int64_t n_experts);
  void add(int64_t layer, int64_t expert, int64_t tokens) {
    counts_[static_cast<size_t>(layer * n_experts_ + expert)] += tokens;
  }
  int64_t n_layers() const { return n_layers_; }
  int64_t n_experts() const { return n_experts_; }
  std::span<const int64_t> layer_counts(int64_t layer) const {
    return {counts_.data() + layer * n_experts_, static_cast<size_t>(n_experts_)};
  }
  // max / mean of a layer's counts (1 = perfectly even; 0 before any token).
  double layer_imbalance(int64_t layer) const;
  // The worst layer's imbalance: uneven routing in any layer makes its busiest expert
  // the step's bottleneck.
  double max_imbalance() const;

 private:
  int64_t n_layers_ = 0, n_experts_ = 0;
  std::vector<int64_t> counts_;  // (n_layers, n_experts)
};

// How the last forward() spread its tokens: distinct experts used, and the most tokens
// any one of them took.
struct StepExpertLoad {
  int64_t experts_used = 0;
  int64_t max_tokens = 0;
};

class MoeFfn {
 public:
  StepExpertLoad last_step_load() const;
  // out (T, dim) = the layer's MoE output for the normed inputs x (T, dim).
  // `scratch` is the model's matmul conversion buffer. Buffers grow to the largest
  // batch and are reused, so a steady decode loop does not allocate.
  void forward(const ModelConfig& config, const MoeWeights& w, int64_t layer, const float* x,
               int64_t n_tokens, float* out, ThreadPool& pool, std::vector<uint8_t>& scratch,
               ExpertLoad& load);
  // Grows the buffers to batches of n_tokens (forward does so itself; the engine calls it
  // at start so that the first request does not fault the pages in).
  void reserve(const ModelConfig& config, int64_t n_tokens);
  int64_t capacity() const { return capacity_; }

 private:
  void route(const ModelConfig& config, const MoeWeights& w, const float* x, int64_t n_tokens,
             ThreadPool& pool, std::vector<uint8_t>& scratch);
  void run_expert(const ModelConfig& config, const MoeWeights& w, int64_t expert, const float* x,
                  float* out, ThreadPool& pool, std::vector<uint8_t>& scratch);
  void run_token(const ModelConfig& config, const MoeWeights& w, int64_t t, const float* x,
                 float* out, ThreadPool& pool, std::vector<uint8_t>& scratch);
  void run_shared(const ModelConfig& config, const MoeWeights& w, const float* x, int64_t n_tokens,
                  float* out, ThreadPool& pool, std::vector<uint8_t>& scratch);

  int64_t capacity_ = 0;
  HugePageVector<float> logits_;                   // (T, n_experts) router logits
  std::vector<float> probs_;                       // (n_experts) route_token scratch
  std::vector<ExpertChoice> choices_;              // (T, k)
  std::vector<int32_t> expert_begin_;              // (n_experts + 1) offsets into routed_
  std::vector<int32_t> routed_;                    // (T * k) choice indices t*k+j grouped by expert
  HugePageVector<float> xe_;                       // (T, dim) inputs of one expert's tokens
  HugePageVector<float> gate_, up_;                // (T, expert_ffn) or (k, expert_ffn) at decode
  HugePageVector<float> ye_;                       // (T, dim) one expert's outputs
  HugePageVector<float> shared_gate_, shared_up_;  // (T, shared_ffn)
};

}  // namespace strata
