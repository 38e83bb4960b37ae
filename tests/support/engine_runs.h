// One-request engine runs for the model tests: the logits at every position of a
// prompt, and a greedy continuation, both through EngineCore as `strata run` and the
// server run the model.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "model/model.h"

namespace strata::testing {

// One sequence, prompts prefilled 512 tokens per step, the model's context, f32 KV.
inline EngineConfig one_request_config(DType kv_type = DType::F32) {
  EngineConfig c;
  c.kv_type = kv_type;
  c.prefix_cache = false;
  c.scheduler.max_seqs = 1;
  c.scheduler.prefill_chunk = 512;
  c.scheduler.max_batch_tokens = 512;
  return c;
}

// [tokens.size()][n_vocab]: the logits after each token of `tokens`.
inline std::vector<float> prompt_logits(EngineCore& engine, const std::vector<int32_t>& tokens) {
  RequestOptions o;
  o.stop.max_tokens = 0;
  o.prompt_logits = static_cast<int32_t>(tokens.size());
  return generate(engine, nullptr, {{"logits", tokens, o}})[0].prompt_logits;
}
inline std::vector<float> prompt_logits(Model& model, ThreadPool& pool,
                                        const std::vector<int32_t>& tokens,
                                        const EngineConfig& config = one_request_config()) {
  EngineCore engine(model, pool, config);
  return prompt_logits(engine, tokens);
}

// `n` greedy tokens after `prompt` (end-of-generation tokens do not stop it).
inline std::vector<int32_t> greedy_tokens(EngineCore& engine, const std::vector<int32_t>& prompt,
                                          int32_t n) {
  RequestOptions o;
  o.sampling.temperature = 0.0f;
  o.stop.max_tokens = n;
  o.stop.ignore_eos = true;
  return generate(engine, nullptr, {{"greedy", prompt, o}})[0].tokens;
}
inline std::vector<int32_t> greedy_tokens(Model& model, ThreadPool& pool,
                                          const std::vector<int32_t>& prompt, int32_t n,
                                          const EngineConfig& config = one_request_config()) {
  EngineCore engine(model, pool, config);
  return greedy_tokens(engine, prompt, n);
}

}  // namespace strata::testing
