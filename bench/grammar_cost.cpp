// grammar_cost MODEL.gguf [steps]
//
// What constrained decoding costs on a model's vocabulary:
//  1. the token mask per sequence step (MaskBuilder::apply plus Matcher::advance) on
//     random walks through a JSON schema grammar and the json_object grammar, at batch 1
//     and 16 (the runner masks the sequences of a step one after another, so a step at
//     batch 16 costs the sum of its 16 masks). A walk picks uniformly among the allowed
//     tokens, so it spends most steps inside strings, where nearly every token is
//     allowed: the mask's worst case.
//  2. decode tokens/s through the engine with and without a JSON schema constraint, at
//     batch 1 and 16 (ignore_eos off; max_tokens 64; a schema whose one string needs
//     200-1000 characters, so that the constraint does not end the requests early), best
//     of three alternating runs each.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "engine/offline.h"
#include "engine/output_processor.h"
#include "grammar/json_schema.h"
#include "grammar/mask_builder.h"
#include "server/output_constraint.h"
#include "tools/isa_env.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const char* kPersonSchema = R"({"type":"object","properties":{
  "name":{"type":"string","minLength":1,"maxLength":40},
  "age":{"type":"integer"},"pet":{"enum":["cat","dog","none"]},
  "tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":4},
  "bio":{"type":"string","maxLength":200}},
  "required":["name","age","pet","tags","bio"]})";

const char* kLongTextSchema = R"({"type":"object","properties":{
  "text":{"type":"string","minLength":200,"maxLength":1000}},"required":["text"]})";

void mask_cost(const char* label, const std::shared_ptr<const grammar::CompiledGrammar>& g,
               int batch, int steps) {
  std::vector<grammar::Matcher> states(static_cast<size_t>(batch), grammar::Matcher(g));
  std::vector<grammar::MaskBuilder> masks;
  for (int b = 0; b < batch; ++b) masks.emplace_back(g);
  std::vector<float> logits(static_cast<size_t>(g->vocab().n_vocab()));
  std::vector<int32_t> allowed;
  std::vector<double> per_mask_us, per_step_us;
  std::mt19937_64 rng(1);
  for (int s = 0; s < steps; ++s) {
    double step_us = 0;
    for (int b = 0; b < batch; ++b) {
      grammar::Matcher& m = states[static_cast<size_t>(b)];
      std::fill(logits.begin(), logits.end(), 0.0f);
      const auto t0 = Clock::now();
      masks[static_cast<size_t>(b)].apply(m, logits);
      const auto t1 = Clock::now();
      allowed.clear();
      for (size_t t = 0; t < logits.size(); ++t) {
        if (logits[t] == 0.0f && !g->vocab().is_eog(static_cast<int32_t>(t)))
          allowed.push_back(static_cast<int32_t>(t));
      }
      if (allowed.empty()) {  // complete: a new walk
        m = grammar::Matcher(g);
        continue;
      }
      const int32_t tok =
          allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      const auto t2 = Clock::now();
      m.advance(tok, masks[static_cast<size_t>(b)].stepper());
      const auto t3 = Clock::now();
      const double us = std::chrono::duration<double, std::micro>((t1 - t0) + (t3 - t2)).count();
      per_mask_us.push_back(us);
      step_us += us;
    }
    per_step_us.push_back(step_us);
  }
  std::sort(per_mask_us.begin(), per_mask_us.end());
  std::sort(per_step_us.begin(), per_step_us.end());
  double sum = 0;
  for (double v : per_mask_us) sum += v;
  double step_sum = 0;
  for (double v : per_step_us) step_sum += v;
  auto pct = [](const std::vector<double>& v, double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  };
  std::printf(
      "mask  %-12s batch %2d: per sequence-step mean %8.1f us p50 %8.1f p99 %8.1f | per step mean "
      "%9.1f us\n",
      label, batch, sum / static_cast<double>(per_mask_us.size()), pct(per_mask_us, 0.5),
      pct(per_mask_us, 0.99), step_sum / static_cast<double>(per_step_us.size()));
}

// The machine is shared: each configuration runs `reps` times, alternating, and the best
// run counts (pauses only ever slow a run down).
void decode_rate(Model& model, ThreadPool& pool, const Tokenizer& tok,
                 const std::shared_ptr<const grammar::CompiledGrammar>& g, int batch, int reps) {
  double best[2] = {0, 0};
  for (int rep = 0; rep < 2 * reps; ++rep) {
    const bool constrained = rep % 2;
    EngineConfig c;
    c.eog_tokens = eog_tokens(tok);
    c.kv_cache_tokens = 4096;
    c.scheduler.max_seqs = 64;
    EngineCore engine(model, pool, c);
    std::vector<OfflineRequest> reqs;
    for (int b = 0; b < batch; ++b) {
      OfflineRequest r;
      r.id = std::to_string(b);
      r.prompt = tok.encode("Write a JSON object with a long text about the sea.", true, false);
      r.options.stop.max_tokens = 64;
      r.options.sampling.seed = static_cast<uint64_t>(b);
      if (constrained) r.options.grammar = g;
      reqs.push_back(std::move(r));
    }
    const auto t0 = Clock::now();
    const auto results = generate(engine, nullptr, reqs);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    int64_t n = 0;
    double max_ttft = 0;
    for (const auto& r : results) {
      n += static_cast<int64_t>(r.tokens.size());
      max_ttft = std::max(max_ttft, r.ttft_ms / 1000.0);
    }
    // Decode rate: tokens after each request's first, over the time after the prefill.
    const double decode_s = s - max_ttft;
    const double rate = static_cast<double>(n - batch) / decode_s;
    std::printf("decode %-13s batch %2d: %5lld tokens in %.2f s (prefill %.2f s): %7.1f tok/s\n",
                constrained ? "json_schema" : "unconstrained", batch, static_cast<long long>(n), s,
                max_ttft, rate);
    best[constrained] = std::max(best[constrained], rate);
  }
  std::printf(
      "decode batch %2d best of %d: unconstrained %.1f tok/s, json_schema %.1f tok/s (%.1f%%)\n",
      batch, reps, best[0], best[1], 100.0 * (best[1] / best[0] - 1.0));
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: grammar_cost MODEL.gguf [steps] [threads] [mask]\n");
    return 2;
  }
  const int steps = argc > 2 ? std::stoi(argv[2]) : 300;
  const int threads = argc > 3 ? std::stoi(argv[3]) : 2;
  Model::LoadOptions lo;
  auto model = Model::load(argv[1], lo);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  const auto vocab = server::grammar_vocab(tok);
  std::printf("vocabulary: %d tokens, %zu trie nodes\n", vocab->n_vocab(), vocab->nodes().size());
  const auto person =
      grammar::compile_gbnf(grammar::schema_to_gbnf(json::parse(kPersonSchema), "schema"), vocab);
  const auto object = grammar::compile_gbnf(grammar::json_object_gbnf(), vocab);
  for (int batch : {1, 16}) {
    mask_cost("json_schema", person, batch, batch == 1 ? steps : steps / 4);
    mask_cost("json_object", object, batch, batch == 1 ? steps : steps / 4);
  }
  if (argc > 4 && std::string(argv[4]) == "mask") return 0;
  ThreadPool pool(threads);
  const auto long_text =
      grammar::compile_gbnf(grammar::schema_to_gbnf(json::parse(kLongTextSchema), "schema"), vocab);
  for (int batch : {1, 16}) decode_rate(*model, pool, tok, long_text, batch, 3);
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::kernels::init_cpu_kernels(strata::tools::isa_overrides_from_env());
  try {
    return strata::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grammar_cost: %s\n", e.what());
    return 1;
  }
}
