// Speculative decoding changes how many tokens a step produces, never which: greedy
// output with each proposer equals greedy output without speculation, token for token,
// with speculating and non-speculating requests batched together, under chunked prefill,
// prefix caching and preemption, and no block leaks after the rollbacks. With sampling,
// the tokens follow the same distribution (a two-sample chi-square test per position).
#include <gtest/gtest.h>

#include "convert/make_model.h"
#include "serving/engine_test_util.h"
#include "support/chi_square.h"
#include "support/paths.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

// Runs the requests with speculation `spec` (a draft model where it needs one).
testing::EngineOutcome run(Model& model, const std::vector<OfflineRequest>& requests,
                           const testing::EngineScenario& s, const SpecConfig& spec,
                           Model* draft = nullptr) {
  EngineConfig c;
  c.scheduler.max_seqs = 64;
  c.spec = spec;
  c.draft_model = draft;
  return testing::run_scenario(model, requests, s, c, 64 * model.config().context_length);
}

// Prompts that repeat themselves (so n-gram lookup finds matches), every third request
// opting out of speculation.
std::vector<OfflineRequest> requests_for(const Model& model, int32_t max_prompt, int32_t max_new) {
  auto reqs = testing::random_requests(40, model.config().n_vocab, max_prompt, max_new, false, 11);
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto& p = reqs[i].prompt;
    const size_t half = p.size() / 2;
    for (size_t j = 0; j < half; ++j) p.push_back(p[j + 1 < p.size() ? j + 1 : 0]);
    reqs[i].options.speculative = i % 3 != 2;
  }
  return reqs;
}

void check_greedy_equivalence(const std::string& path, const SpecConfig& spec,
                              const std::string& draft_path = "") {
  auto model = Model::load(path);
  std::unique_ptr<Model> draft;
  if (!draft_path.empty()) draft = Model::load(draft_path);
  const int32_t max_prompt = 60, max_new = 40;
  const auto requests = requests_for(*model, max_prompt, max_new);
  const auto ref = run(*model, requests, {"off"}, SpecConfig{});
  const int64_t small_pool = (2 * max_prompt + max_new + spec.k) * 3 / 2;
  for (const auto& s : testing::batching_scenarios(small_pool)) {
    if (s.prefix_cache && s.kv_tokens == 0) continue;  // covered by the combined scenario
    SCOPED_TRACE(s.name);
    const auto got = run(*model, requests, s, spec, draft.get());
    testing::expect_same_tokens(got, ref, s);
    EXPECT_GT(got.metrics.spec_drafted_tokens, 0);
    EXPECT_GT(got.metrics.spec_accepted_tokens, 0);
    EXPECT_GT(got.metrics.plain_decode_steps, 0);  // the opted-out requests
  }
}

SpecConfig spec_of(SpecMethod m, int32_t k = 4, bool adaptive = false) {
  SpecConfig c;
  c.method = m;
  c.k = k;
  c.adaptive = adaptive;
  c.draft_layers = 2;
  return c;
}

TEST(SpecEquivalence, NgramGreedyAidreams) {
  check_greedy_equivalence(testing::aidreams_gguf(), spec_of(SpecMethod::kNgram));
}
TEST(SpecEquivalence, NgramGreedyGqaWithLongDrafts) {
  check_greedy_equivalence(testing::gqa_gguf(), spec_of(SpecMethod::kNgram, 7));
}
TEST(SpecEquivalence, EarlyExitGreedyAidreams) {
  check_greedy_equivalence(testing::aidreams_gguf(), spec_of(SpecMethod::kEarlyExit));
}
// A random-weight model with `vocab_from`'s tokenizer.
std::string random_model(const std::string& name, const std::string& vocab_from) {
  MakeModelOptions o;
  o.preset = "tiny";
  o.output_path = testing::scratch_dir() + "/" + name;
  o.vocab_path = vocab_from;
  o.context_length = 1024;
  o.seed = 3;
  make_model(o);
  return o.output_path;
}

TEST(SpecEquivalence, DraftModelGreedyAidreams) {
  // The model drafting for itself accepts nearly everything; a random-weight draft of the
  // same vocabulary little (many rollbacks): both must give the target's tokens.
  check_greedy_equivalence(testing::aidreams_gguf(), spec_of(SpecMethod::kDraftModel),
                           testing::aidreams_gguf());
}
TEST(SpecEquivalence, RandomDraftModelGreedyAidreams) {
  check_greedy_equivalence(
      testing::aidreams_gguf(), spec_of(SpecMethod::kDraftModel, 3),
      random_model("spec-draft-aidreams-vocab.gguf", testing::aidreams_gguf()));
}

TEST(SpecEquivalence, DraftModelWithAnotherVocabularyIsRefused) {
  auto target = Model::load(testing::aidreams_gguf());
  auto other = Model::load(random_model(
      "spec-draft-llama-vocab.gguf", testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf"));
  ThreadPool pool(1);
  EngineConfig c;
  c.kv_cache_tokens = 1024;
  c.spec = spec_of(SpecMethod::kDraftModel);
  c.draft_model = other.get();
  try {
    EngineCore engine(*target, pool, c);
    ADD_FAILURE() << "a draft model of another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabular"), std::string::npos) << e.what();
  }
  c.draft_model = nullptr;
  EXPECT_THROW(EngineCore(*target, pool, c), Error);  // --spec draft without a model
}

// Tokens at generation positions 0..3 of one prompt over many seeds, with speculation on
// and off: each position's distribution must agree (two-sample chi-square, false-alarm
// rate 1e-4 per test; 8 tests).
void check_distribution(const SpecConfig& spec, const SamplingParams& base) {
  auto model = Model::load(testing::aidreams_gguf());
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 365, 261, 403, 407};
  constexpr int kSamples = 3000, kPositions = 4;
  std::vector<OfflineRequest> reqs;
  for (int i = 0; i < kSamples; ++i) {
    OfflineRequest r;
    r.id = std::to_string(i);
    r.prompt = prompt;
    r.options.sampling = base;
    r.options.sampling.seed = 5000 + static_cast<uint64_t>(i);
    r.options.stop.max_tokens = kPositions;
    r.options.stop.ignore_eos = true;
    reqs.push_back(r);
  }
  const auto off = run(*model, reqs, {"off"}, SpecConfig{});
  const auto on = run(*model, reqs, {"on"}, spec);
  EXPECT_GT(on.metrics.spec_drafted_tokens, 0);
  EXPECT_LT(on.metrics.spec_accepted_tokens, on.metrics.spec_drafted_tokens);  // rejections seen
  for (int pos = 0; pos < kPositions; ++pos) {
    std::vector<int32_t> a, b;
    for (int i = 0; i < kSamples; ++i) {
      a.push_back(off.tokens[static_cast<size_t>(i)][static_cast<size_t>(pos)]);
      b.push_back(on.tokens[static_cast<size_t>(i)][static_cast<size_t>(pos)]);
    }
    const auto chi = testing::two_sample_chi_square(a, b, 1e-4);
    EXPECT_TRUE(chi.same()) << "position " << pos << ": " << chi.statistic << " > " << chi.critical
                            << " (df " << chi.df << ")";
  }
}

TEST(SpecDistribution, EarlyExitTemperatureOne) {
  SamplingParams p;
  p.temperature = 1.0f;
  check_distribution(spec_of(SpecMethod::kEarlyExit), p);
}
TEST(SpecDistribution, NgramTopK) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 8;
  check_distribution(spec_of(SpecMethod::kNgram), p);
}

}  // namespace
}  // namespace strata
