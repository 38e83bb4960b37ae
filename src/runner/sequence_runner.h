// Runs one sequence through the model: prefill of the prompt (in chunks of at most
// `max_batch_tokens`), then token-by-token decode, with its own paged KV blocks. This
// is the batch-of-one path behind `strata run` and `strata logits`; the serving engine
// drives Model::forward with many sequences through the same ForwardBatch contract.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_manager.h"
#include "model/model.h"
#include "sample/sampler.h"

namespace strata {

struct SequenceRunnerOptions {
  int64_t context_length = 0;    // 0 = the model's context length
  int64_t block_size = 16;
  int64_t max_batch_tokens = 512;  // prefill chunk
  DType kv_type = DType::F32;
  HeadModes head_modes;  // sparse attention; dense by default
  HeadMapOptions head_map;  // resolved against the model when head_modes is dense
};

class SequenceRunner {
 public:
  SequenceRunner(Model& model, ThreadPool& pool, const SequenceRunnerOptions& options);

  int64_t context_length() const { return context_length_; }
  int64_t n_past() const { return static_cast<int64_t>(history_.size()); }
  const std::vector<int32_t>& history() const { return history_; }

  // Appends tokens to the sequence. Returns the logits of the last token (n_vocab), or
  // of every token when all_logits is set (n_tokens x n_vocab, copied into `all_out`).
  std::span<const float> feed(std::span<const int32_t> tokens, std::vector<float>* all_out = nullptr);

  // Clears the sequence (keeps the KV storage).
  void reset();

 private:
  void ensure_blocks(int64_t n_tokens);

  Model& model_;
  ThreadPool& pool_;
  SequenceRunnerOptions options_;
  int64_t context_length_;
  KvCache cache_;
  KvManager kv_;
  SequenceKv seq_;
  std::vector<int32_t> history_;
  // Reused batch buffers.
  std::vector<int32_t> positions_, seq_index_, logit_rows_;
  std::vector<float> last_logits_;
};

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  bool ignore_eos = false;
  Tracer* tracer = nullptr;  // not owned: records a "sample" span per token when set
};

// Prefills `prompt`, then samples up to max_new_tokens tokens, calling on_token for
// each; generation stops early when is_eog(token) (unless ignore_eos) or the context is
// full, or when on_token returns false. Returns the generated tokens.
std::vector<int32_t> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                              Sampler& sampler, const GenerateOptions& options,
                              const std::function<bool(int32_t)>& is_eog,
                              const std::function<bool(int32_t)>& on_token);

}  // namespace strata
