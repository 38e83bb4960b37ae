#include "eval/needle.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/splitmix.h"
#include "engine/offline.h"
#include "sample/sampler.h"

namespace strata {
namespace {

// Metadata keys written by convert/induction_model.cpp (kept as literals so this
// library does not depend on the converter).
constexpr const char* kNeedleKey = "strata.induction.needle_tokens";
constexpr const char* kFillerKey = "strata.induction.filler_tokens";
constexpr const char* kRetrievalKey = "strata.induction.retrieval_heads";

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

using Rng = SplitMix64;

std::vector<int32_t> token_list(const gguf::GgufFile& f, const char* key, int64_t n_vocab) {
  if (!f.has(key)) {
    throw Error(f.name() + ": no " + key +
                " metadata (strata eval needle needs a model made by `strata make-model --preset "
                "induction`)");
  }
  std::vector<int32_t> out;
  for (int64_t id : f.get_int_array(key)) {
    if (id < 0 || id >= n_vocab)
      throw Error(f.name() + ": " + key + ": token id " + std::to_string(id) + " out of range");
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

}  // namespace

double NeedleTask::chance() const {
  return needle_tokens.size() > 1 ? 1.0 / static_cast<double>(needle_tokens.size() - 1) : 1.0;
}

NeedleTask needle_task_from_model(const Model& model) {
  const auto& f = model.file();
  const int64_t n_vocab = model.config().n_vocab;
  NeedleTask t;
  t.needle_tokens = token_list(f, kNeedleKey, n_vocab);
  t.filler_tokens = token_list(f, kFillerKey, n_vocab);
  if (t.needle_tokens.size() < 2 || t.filler_tokens.empty()) {
    throw Error(f.name() + ": needs at least 2 needle tokens and 1 filler token");
  }
  for (int32_t n : t.needle_tokens) {
    if (std::find(t.filler_tokens.begin(), t.filler_tokens.end(), n) != t.filler_tokens.end()) {
      throw Error(f.name() + ": needle token " + std::to_string(n) + " is also a filler token");
    }
  }
  if (f.has(kRetrievalKey)) t.retrieval_heads = f.get_int_array(kRetrievalKey);
  const int64_t bos = f.get_int("tokenizer.ggml.bos_token_id", -1);
  t.bos = bos >= 0 && bos < n_vocab ? static_cast<int32_t>(bos) : -1;
  return t;
}

NeedlePrompt make_needle_prompt(const NeedleTask& task, int64_t ctx, double depth, uint64_t seed) {
  const int64_t prefix = task.bos >= 0 ? 1 : 0;
  if (ctx < prefix + 3)
    throw Error("needle: ctx " + std::to_string(ctx) + " is too short for K V ... K");
  if (!(depth >= 0.0 && depth <= 1.0)) throw Error("needle: depth must be in [0, 1]");
  if (task.needle_tokens.size() < 2 || task.filler_tokens.empty())
    throw Error("needle: empty token sets");
  Rng rng(seed);
  NeedlePrompt p;
  const size_t k = rng.index(task.needle_tokens.size());
  size_t v = rng.index(task.needle_tokens.size() - 1);
  if (v >= k) ++v;  // V uniform over the needle set without K
  p.key = task.needle_tokens[k];
  p.value = task.needle_tokens[v];
  const int64_t n_filler = ctx - prefix - 3;
  p.key_pos = prefix + std::llround(depth * static_cast<double>(n_filler));
  p.tokens.resize(static_cast<size_t>(ctx));
  if (prefix) p.tokens[0] = task.bos;
  for (int64_t i = prefix; i < ctx - 1; ++i) {
    p.tokens[static_cast<size_t>(i)] = task.filler_tokens[rng.index(task.filler_tokens.size())];
  }
  p.tokens[static_cast<size_t>(p.key_pos)] = p.key;
  p.tokens[static_cast<size_t>(p.key_pos + 1)] = p.value;
  p.tokens[static_cast<size_t>(ctx - 1)] = p.key;
  return p;
}

NeedleResult needle_accuracy(Model& model, const EngineConfig& config, int64_t ctx, double depth,
                             int64_t trials, uint64_t seed, ThreadPool& pool) {
  if (ctx > model.config().context_length) {
    throw Error("needle: ctx " + std::to_string(ctx) + " exceeds the model's context length " +
                std::to_string(model.config().context_length));
  }
  if (trials <= 0) throw Error("needle: trials must be positive");
  const NeedleTask task = needle_task_from_model(model);
  EngineConfig c = config;
  c.context_length = std::max(c.context_length, ctx);
  c.prefix_cache = false;
  c.scheduler.max_seqs = 1;
  EngineCore engine(model, pool, c);
  // The answer is the argmax of the logits after the final K (a prompt may then fill the
  // model's whole context).
  RequestOptions last_logits;
  last_logits.stop.max_tokens = 0;
  last_logits.prompt_logits = 1;
  NeedleResult r;
  r.ctx = ctx;
  r.depth = depth;
  uint64_t depth_bits = 0;
  std::memcpy(&depth_bits, &depth, sizeof depth_bits);
  const double t0 = steady_now_s();
  for (int64_t i = 0; i < trials; ++i) {
    const uint64_t trial_seed =
        mix(mix(mix(seed, static_cast<uint64_t>(ctx)), depth_bits), static_cast<uint64_t>(i));
    const NeedlePrompt p = make_needle_prompt(task, ctx, depth, trial_seed);
    const auto logits = generate(engine, nullptr, {{"", p.tokens, last_logits}})[0].prompt_logits;
    const int32_t answer = argmax(logits);
    ++r.trials;
    if (answer == p.value) ++r.correct;
    if (answer == p.key) ++r.answered_key;
  }
  r.seconds = steady_now_s() - t0;
  return r;
}

NeedleResult needle_accuracy(Model& model, const EngineConfig& config, int64_t ctx, double depth,
                             int64_t trials, uint64_t seed) {
  ThreadPool pool(ThreadPool::default_threads());
  return needle_accuracy(model, config, ctx, depth, trials, seed, pool);
}

}  // namespace strata
