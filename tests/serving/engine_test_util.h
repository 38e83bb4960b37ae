// Shared pieces of the engine tests: random request sets, scenario runners and the
// checks that compare them.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "model/model.h"

namespace strata::testing {

// `n` requests whose prompts are drawn from a few shared stems (so prefixes repeat),
// with lengths from 1 token up to `max_prompt`, and mixed max_tokens.
inline std::vector<OfflineRequest> random_requests(size_t n, int64_t n_vocab, int32_t max_prompt,
                                                   int32_t max_new, bool sampled, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(n_vocab - 1));
  std::vector<std::vector<int32_t>> stems(4);
  for (auto& s : stems) {
    s.push_back(1);
    for (int32_t i = 1; i < max_prompt; ++i) s.push_back(tok(rng));
  }
  std::vector<OfflineRequest> out;
  for (size_t i = 0; i < n; ++i) {
    OfflineRequest r;
    r.id = std::to_string(i);
    const auto& stem = stems[rng() % stems.size()];
    // Lengths: a spread from 1 to max_prompt, with a tail of fresh random tokens so
    // prompts share a prefix but differ after it.
    const int32_t len = 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(max_prompt));
    const int32_t shared = static_cast<int32_t>(rng() % static_cast<uint32_t>(len + 1));
    r.prompt.assign(stem.begin(), stem.begin() + shared);
    while (static_cast<int32_t>(r.prompt.size()) < len) r.prompt.push_back(tok(rng));
    if (r.prompt.empty()) r.prompt.push_back(1);
    r.options.stop.max_tokens = 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(max_new));
    r.options.stop.ignore_eos = true;
    r.options.sampling.temperature = sampled ? 0.8f : 0.0f;
    r.options.sampling.top_k = sampled ? 40 : 0;
    r.options.sampling.seed = 1000 + i;
    out.push_back(std::move(r));
  }
  return out;
}

// Asserts that the engine holds nothing: no request queued or running and every block
// either free or cached (reclaimable).
inline void expect_no_leaks(const EngineCore& engine) {
  const auto m = engine.metrics();
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  EXPECT_EQ(m.kv.used, 0);
  EXPECT_EQ(m.kv.free + m.kv.cached, m.kv.n_blocks);
  EXPECT_FALSE(engine.has_work());
}

// One way of running a request set through the engine; equivalence tests compare each
// against running the requests one at a time.
struct EngineScenario {
  const char* name;
  bool one_at_a_time = false;
  int64_t prefill_chunk = 512;
  int64_t kv_tokens = 0;  // 0 = roomy
  bool prefix_cache = false;
};

struct EngineOutcome {
  std::vector<std::vector<int32_t>> tokens;
  EngineMetrics metrics;
};

// Runs `requests` on two threads through an engine configured as `base` (KV type,
// speculation, max_seqs, ...) with the scenario's chunk, prefix cache and pool
// (`roomy_tokens` where the scenario names none), and expects no leaks after each run.
inline EngineOutcome run_scenario(Model& model, const std::vector<OfflineRequest>& requests,
                                  const EngineScenario& s, EngineConfig base,
                                  int64_t roomy_tokens) {
  ThreadPool pool(2);
  base.kv_cache_tokens = s.kv_tokens > 0 ? s.kv_tokens : roomy_tokens;
  base.prefix_cache = s.prefix_cache;
  base.scheduler.max_batch_tokens = 1024;
  base.scheduler.prefill_chunk = s.prefill_chunk;
  EngineCore engine(model, pool, base);
  EngineOutcome out;
  if (s.one_at_a_time) {
    for (const auto& r : requests) {
      out.tokens.push_back(generate(engine, nullptr, {r})[0].tokens);
      expect_no_leaks(engine);
    }
  } else {
    for (const auto& res : generate(engine, nullptr, requests)) out.tokens.push_back(res.tokens);
  }
  out.metrics = engine.metrics();
  expect_no_leaks(engine);
  return out;
}

// The scenarios that must not change any token: continuous batching, a 7-token prefill
// chunk, preemption in a pool of `small_pool` tokens, prefix caching, and all of them.
inline std::vector<EngineScenario> batching_scenarios(int64_t small_pool) {
  return {
      {.name = "continuous batching"},
      {.name = "prefill chunk 7", .prefill_chunk = 7},
      {.name = "preemption", .kv_tokens = small_pool},
      {.name = "prefix caching", .prefix_cache = true},
      {.name = "prefix caching + chunk 7 + preemption",
       .prefill_chunk = 7,
       .kv_tokens = small_pool,
       .prefix_cache = true},
  };
}

// Expects `got` to hold `ref`'s tokens, and the preemptions and prefix hits its scenario
// exists to cause.
inline void expect_same_tokens(const EngineOutcome& got, const EngineOutcome& ref,
                               const EngineScenario& s) {
  ASSERT_EQ(got.tokens.size(), ref.tokens.size());
  for (size_t i = 0; i < ref.tokens.size(); ++i)
    EXPECT_EQ(got.tokens[i], ref.tokens[i]) << "request " << i;
  if (s.kv_tokens > 0) {
    EXPECT_GT(got.metrics.preemptions, 0);
  }
  if (s.prefix_cache) {
    EXPECT_GT(got.metrics.prefix_hits_tokens, 0);
  }
}

}  // namespace strata::testing
