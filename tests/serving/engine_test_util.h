// Shared pieces of the engine tests: random request sets and scenario runners.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/engine_core.h"
#include "engine/offline.h"

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

}  // namespace strata::testing
