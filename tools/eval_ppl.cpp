// strata eval ppl -m MODEL.gguf -f TEXT [-c N] [--chunks K]
// strata eval kld -m MODEL.gguf -f TEXT [-c N] (--ref-model REF.gguf | --ref-logits FILE)
// strata eval kld -m REF.gguf -f TEXT [-c N] --save-logits FILE
// Perplexity as llama.cpp's llama-perplexity computes it: the text is tokenized once (no
// BOS), cut into non-overlapping windows of -c tokens (default 512, or the model's
// context if smaller; a trailing partial window is dropped), the first token of each
// window is replaced by BOS when the model adds one, and in each window the logits at
// positions c/2 .. c-2 score the tokens c/2+1 .. c-1 (eval/logit_stats.h PplPlan).
// KLD compares the same rows of two models: KL(P_ref || P_model), and top-1 agreement
// (argmax equal). Both run through the engine (EngineCore, prompt logits rows).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "eval/logit_stats.h"
#include "eval/logits_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {
namespace {

struct EvalFlags {
  EngineFlags engine;
  std::string text_path, ref_model, ref_logits, save_logits;
  int64_t chunks = 0;  // 0 = every window of the text
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("-f: cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw Error("-f: " + path + " is empty");
  return s.str();
}

// One model behind an engine, scoring windows.
struct Scorer {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<EngineCore> engine;
  int64_t n_vocab = 0;

  Scorer(const EngineFlags& flags, const std::string& path, int64_t n_ctx) {
    EngineFlags f = flags;
    f.model_path = path;
    f.ctx = n_ctx;
    model = Model::load(path, f.load_options());
    if (n_ctx > model->config().context_length)
      throw Error("-c " + std::to_string(n_ctx) + " exceeds the context length " +
                  std::to_string(model->config().context_length) + " of " + path);
    n_vocab = model->config().n_vocab;
    pool = std::make_unique<ThreadPool>(f.thread_count());
    engine = std::make_unique<EngineCore>(*model, *pool, f.single_request_config(*model));
  }

  // Log-probs of the scored rows of one window: plan.scored_per_chunk() x n_vocab.
  std::vector<float> score(const std::vector<int32_t>& window, const PplPlan& plan) {
    RequestOptions o;
    o.stop.max_tokens = 0;
    o.prompt_logits = static_cast<int32_t>(plan.n_ctx - plan.first);  // rows first .. n_ctx-1
    std::vector<float> rows = generate(*engine, nullptr, {{"w", window, o}})[0].prompt_logits;
    const size_t v = static_cast<size_t>(n_vocab);
    const size_t want = static_cast<size_t>(plan.scored_per_chunk());
    if (rows.size() < want * v) throw Error("engine returned fewer prompt logits than asked");
    std::vector<float> logp(want * v);
    std::vector<double> tmp(v);
    for (size_t r = 0; r < want; ++r) {
      log_softmax(std::span<const float>(rows.data() + r * v, v), tmp);
      for (size_t i = 0; i < v; ++i) logp[r * v + i] = static_cast<float>(tmp[i]);
    }
    return logp;
  }
};

std::vector<int32_t> window_of(const std::vector<int32_t>& tokens, const PplPlan& plan, int64_t c,
                               int32_t bos) {
  std::vector<int32_t> w(tokens.begin() + c * plan.n_ctx, tokens.begin() + (c + 1) * plan.n_ctx);
  if (bos >= 0) w[0] = bos;
  return w;
}

// Token stream and plan of the text under `model`'s tokenizer.
std::vector<int32_t> tokenize(const Model& model, const EvalFlags& f, PplPlan& plan, int64_t n_ctx,
                              int32_t& bos) {
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  bos = tok.add_bos() ? tok.bos_id() : -1;
  std::vector<int32_t> ids = tok.encode(read_text(f.text_path), false, false);
  plan = plan_perplexity(static_cast<int64_t>(ids.size()), n_ctx);
  if (f.chunks > 0) plan.n_chunks = std::min(plan.n_chunks, f.chunks);
  ids.resize(static_cast<size_t>(plan.n_chunks * plan.n_ctx));
  return ids;
}

int64_t window_size(const EvalFlags& f) {
  if (f.chunks < 0) throw Error("--chunks must be >= 0");
  return f.engine.ctx > 0 ? f.engine.ctx : 512;
}

double nll_at(std::span<const float> logp, int32_t token) {
  return -static_cast<double>(logp[static_cast<size_t>(token)]);
}

void print_summary(const char* what, const Summary& s) {
  std::printf("%-10s mean %.6f  median %.6f  p99 %.6f  max %.6f  (%lld positions)\n", what, s.mean,
              s.median, s.p99, s.max, static_cast<long long>(s.count));
}

void eval_ppl(const EvalFlags& f) {
  int64_t n_ctx = window_size(f);
  auto probe = Model::load(f.engine.model_path, f.engine.load_options());
  n_ctx = std::min<int64_t>(n_ctx, probe->config().context_length);
  PplPlan plan;
  int32_t bos = -1;
  const auto tokens = tokenize(*probe, f, plan, n_ctx, bos);
  probe.reset();
  Scorer s(f.engine, f.engine.model_path, n_ctx);
  std::vector<double> nll;
  const size_t v = static_cast<size_t>(s.n_vocab);
  for (int64_t c = 0; c < plan.n_chunks; ++c) {
    const auto w = window_of(tokens, plan, c, bos);
    const auto logp = s.score(w, plan);
    for (int64_t r = 0; r < plan.scored_per_chunk(); ++r)
      nll.push_back(nll_at(std::span<const float>(logp.data() + r * v, v),
                           w[static_cast<size_t>(plan.first + r + 1)]));
    std::fprintf(stderr, "[%lld] running ppl %.4f\n", static_cast<long long>(c + 1),
                 perplexity(nll));
  }
  std::printf("model %s, text %s: %lld windows of %lld tokens, scored the last %lld of each\n",
              f.engine.model_path.c_str(), f.text_path.c_str(),
              static_cast<long long>(plan.n_chunks), static_cast<long long>(plan.n_ctx),
              static_cast<long long>(plan.scored_per_chunk()));
  print_summary("nll", summarize(nll));
  std::printf("ppl %.4f\n", perplexity(nll));
}

void eval_kld(const EvalFlags& f) {
  const int modes =
      !f.ref_model.empty() + !f.ref_logits.empty() + static_cast<int>(!f.save_logits.empty());
  if (modes != 1) throw Error("kld: give exactly one of --ref-model, --ref-logits, --save-logits");
  int64_t n_ctx = window_size(f);
  RefLogits ref;
  std::unique_ptr<Scorer> ref_scorer;
  int32_t bos = -1;
  if (!f.ref_logits.empty()) {
    ref = read_ref_logits(f.ref_logits);
    n_ctx = ref.plan.n_ctx;
    if (f.chunks > 0) ref.plan.n_chunks = std::min(ref.plan.n_chunks, f.chunks);
  } else {
    auto probe = Model::load(f.engine.model_path, f.engine.load_options());
    n_ctx = std::min<int64_t>(n_ctx, probe->config().context_length);
    ref.tokens = tokenize(*probe, f, ref.plan, n_ctx, bos);
    ref.n_vocab = probe->config().n_vocab;
  }
  Scorer s(f.engine, f.engine.model_path, n_ctx);
  if (!f.ref_model.empty()) {
    ref_scorer = std::make_unique<Scorer>(f.engine, f.ref_model, n_ctx);
    if (ref_scorer->n_vocab != s.n_vocab)
      throw Error("--ref-model: vocabulary sizes differ (" + std::to_string(ref_scorer->n_vocab) +
                  " vs " + std::to_string(s.n_vocab) + ")");
  }
  if (ref.n_vocab != s.n_vocab)
    throw Error("--ref-logits: n_vocab " + std::to_string(ref.n_vocab) + " but the model has " +
                std::to_string(s.n_vocab));
  const PplPlan& plan = ref.plan;
  const size_t v = static_cast<size_t>(s.n_vocab);
  const size_t rows = static_cast<size_t>(plan.scored_per_chunk());
  if (!f.save_logits.empty()) {
    ref.logp.reserve(static_cast<size_t>(plan.n_chunks) * rows * v);
    for (int64_t c = 0; c < plan.n_chunks; ++c) {
      const auto w = window_of(ref.tokens, plan, c, bos);
      const auto logp = s.score(w, plan);
      ref.logp.insert(ref.logp.end(), logp.begin(), logp.end());
    }
    // Store the windows as scored (BOS in place), so --ref-logits needs no tokenizer.
    for (int64_t c = 0; c < plan.n_chunks && bos >= 0; ++c)
      ref.tokens[static_cast<size_t>(c * plan.n_ctx)] = bos;
    write_ref_logits(f.save_logits, ref);
    std::printf("wrote %lld windows x %zu rows x %zu log-probs to %s\n",
                static_cast<long long>(plan.n_chunks), rows, v, f.save_logits.c_str());
    return;
  }
  std::vector<double> kld, nll, ref_nll;
  int64_t agree = 0;
  std::vector<double> a(v), b(v);
  for (int64_t c = 0; c < plan.n_chunks; ++c) {
    // Saved windows already hold BOS; side by side the tokens come from tokenize().
    const auto w = window_of(ref.tokens, plan, c, bos);
    const auto logp = s.score(w, plan);
    std::vector<float> rlogp;
    const float* rp = nullptr;
    if (ref_scorer) {
      rlogp = ref_scorer->score(w, plan);
      rp = rlogp.data();
    } else {
      rp = ref.logp.data() + static_cast<size_t>(c) * rows * v;
    }
    for (size_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < v; ++i) {
        a[i] = rp[r * v + i];
        b[i] = logp[r * v + i];
      }
      kld.push_back(kl_divergence(a, b));
      agree += argmax(a) == argmax(b);
      const int32_t next = w[static_cast<size_t>(plan.first) + r + 1];
      nll.push_back(-b[static_cast<size_t>(next)]);
      ref_nll.push_back(-a[static_cast<size_t>(next)]);
    }
  }
  std::printf("model %s vs %s: %lld windows of %lld tokens\n", f.engine.model_path.c_str(),
              ref_scorer ? f.ref_model.c_str() : f.ref_logits.c_str(),
              static_cast<long long>(plan.n_chunks), static_cast<long long>(plan.n_ctx));
  print_summary("kld", summarize(kld));
  std::printf("top1 agreement %.4f%% (%lld / %zu)\n",
              100.0 * static_cast<double>(agree) / static_cast<double>(kld.size()),
              static_cast<long long>(agree), kld.size());
  std::printf("ppl %.4f  ref ppl %.4f\n", perplexity(nll), perplexity(ref_nll));
}

}  // namespace

void register_eval_ppl_kld(CLI::App& eval) {
  auto fp = std::make_shared<EvalFlags>();
  auto* ppl = eval.add_subcommand("ppl", "perplexity over non-overlapping windows of -c tokens");
  fp->engine.add(*ppl);
  ppl->add_option("-f,--file", fp->text_path, "text file")->required();
  ppl->add_option("--chunks", fp->chunks, "score at most this many windows (0 = all)");
  ppl->callback([fp] { eval_ppl(*fp); });

  auto fk = std::make_shared<EvalFlags>();
  auto* kld = eval.add_subcommand("kld", "KL divergence and top-1 agreement against a reference");
  fk->engine.add(*kld);
  kld->add_option("-f,--file", fk->text_path, "text file (not needed with --ref-logits)");
  kld->add_option("--chunks", fk->chunks, "score at most this many windows (0 = all)");
  kld->add_option("--ref-model", fk->ref_model, "reference model, run side by side");
  kld->add_option("--ref-logits", fk->ref_logits, "reference log-probs saved by --save-logits");
  kld->add_option("--save-logits", fk->save_logits, "save this model's log-probs as a reference");
  kld->callback([fk] {
    if (fk->ref_logits.empty() && fk->text_path.empty()) throw Error("kld: -f TEXT is required");
    eval_kld(*fk);
  });
}

}  // namespace strata::tools
