// Needle-in-a-haystack retrieval accuracy on a model whose answer is known (the
// constructed induction model, convert/induction_model.h): the prompt is
//
//   [BOS] filler ... K V filler ... filler K
//
// with "K V" placed at a relative depth of the filler, K and V two different needle
// tokens and the filler drawn from a disjoint set, all chosen per trial by a seeded RNG.
// A trial is correct when the greedy next token after the prompt is V. A model that
// cannot see the needle scores about 1/(|needle set| - 1) (chance) or less.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "model/model.h"

namespace strata {

struct NeedleTask {
  std::vector<int32_t> filler_tokens;
  std::vector<int32_t> needle_tokens;
  int32_t bos = -1;                      // -1: no BOS at position 0
  std::vector<int64_t> retrieval_heads;  // layer * n_kv_heads + kv_head (ground truth)
  double chance() const;                 // 1 / (|needle| - 1): a uniform guess of V
};

// Reads the token sets and the retrieval heads from the model's strata.induction.*
// metadata; throws strata::Error naming the missing key for other models.
NeedleTask needle_task_from_model(const Model& model);

struct NeedlePrompt {
  std::vector<int32_t> tokens;  // ctx tokens, ending with the key
  int32_t key = 0, value = 0;
  int64_t key_pos = 0;  // index of K inside the haystack (V follows it)
};

// depth in [0, 1]: 0 puts "K V" right after BOS, 1 right before the final K.
NeedlePrompt make_needle_prompt(const NeedleTask& task, int64_t ctx, double depth, uint64_t seed);

struct NeedleResult {
  int64_t ctx = 0;
  double depth = 0.0;
  int64_t trials = 0;
  int64_t correct = 0;
  int64_t answered_key = 0;  // trials whose answer was K itself (a copy, not a retrieval)
  double seconds = 0.0;
  double accuracy() const {
    return trials > 0 ? static_cast<double>(correct) / static_cast<double>(trials) : 0.0;
  }
};

// Runs `trials` prompts of `ctx` tokens with the needle at `depth`, one after another,
// each a request for its last position's logits (the answer is their argmax) to an
// engine built from `config` (its context is raised to hold ctx tokens when smaller; the prefix
// cache is off, so every trial computes its whole prompt). Trial i of (ctx, depth, seed) is the
// same prompt on every run and every machine.
NeedleResult needle_accuracy(Model& model, const EngineConfig& config, int64_t ctx, double depth,
                             int64_t trials, uint64_t seed, ThreadPool& pool);
// The same with a pool of ThreadPool::default_threads() threads.
NeedleResult needle_accuracy(Model& model, const EngineConfig& config, int64_t ctx, double depth,
                             int64_t trials, uint64_t seed);

}  // namespace strata
