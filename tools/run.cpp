// strata run: generate text from a prompt, streaming only the generated text to stdout
// and one timing line to stderr. An engine with one request, as serve runs it.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>

#include "core/clock.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "engine/output_processor.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/spec_flags.h"

namespace strata::tools {
namespace {

struct RunFlags {
  EngineFlags engine;
  SpecFlags spec;
  std::string prompt;
  int64_t n_predict = 128;
  SamplingParams sampling;
  bool ignore_eos = false;
  bool print_tokens = false;
};

// One request through the engine, as `serve` runs it: the output is streamed as the
// engine produces it.
void run(const RunFlags& f) {
  const TraceFile trace(f.engine.trace);
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  model->set_tracer(trace.get());  // forward-pass and sampling spans; no engine step spans
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ThreadPool pool(f.engine.thread_count());
  EngineConfig config = f.engine.single_request_config(*model);
  config.eog_tokens = eog_tokens(tok);
  std::unique_ptr<Model> draft;
  f.spec.apply(config, f.engine.load_options(), draft);
  EngineCore engine(*model, pool, config);

  const auto prompt = tok.encode(f.prompt, tok.add_bos(), false);
  if (prompt.empty()) throw Error("the prompt encodes to no tokens");
  if (f.n_predict < 0 || f.n_predict > INT32_MAX)
    throw Error("-n/--n-predict: must be in [0, 2^31)");
  RequestOptions options;
  options.sampling = f.sampling;
  options.stop.max_tokens = static_cast<int32_t>(f.n_predict);
  options.stop.ignore_eos = f.ignore_eos;
  StreamingDecoder decoder(tok);

  const double t0 = steady_now_s();
  double prompt_s = 0.0;
  size_t n_printed = 0;
  auto on_output = [&](const RequestOutput& o) {
    for (int32_t id : o.new_tokens) {
      if (n_printed == 0) prompt_s = steady_now_s() - t0;
      if (f.print_tokens) {
        std::printf(n_printed == 0 ? "%d" : " %d", id);
      } else {
        const std::string text = decoder.push(id);
        std::fwrite(text.data(), 1, text.size(), stdout);
      }
      ++n_printed;
    }
    std::fflush(stdout);
  };
  const auto out = generate(engine, nullptr, {{"run", prompt, options}}, on_output)[0];
  if (!f.print_tokens) {
    const std::string rest = decoder.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::fflush(stdout);
  const double total_s = steady_now_s() - t0;
  if (n_printed == 0) prompt_s = total_s;
  const double gen_s = total_s - prompt_s;
  const auto n_gen = static_cast<double>(out.tokens.size());
  // The first generated token comes from the prompt pass; decode speed counts the rest.
  std::fprintf(stderr, "\nprompt: %zu tokens, %.2f tok/s | generated: %zu tokens, %.2f tok/s\n",
               prompt.size(), static_cast<double>(prompt.size()) / std::max(prompt_s, 1e-9),
               out.tokens.size(), n_gen > 1 ? (n_gen - 1) / std::max(gen_s, 1e-9) : 0.0);
  if (config.spec.method != SpecMethod::kNone) {
    const EngineMetrics m = engine.metrics();
    const auto steps = static_cast<double>(m.spec_decode_steps + m.plain_decode_steps);
    std::fprintf(stderr,
                 "speculation (%s): %lld draft tokens, %lld accepted (%.1f%%), %lld of %lld decode "
                 "steps drafted, %.2f ms per decode step\n",
                 std::string(spec_method_name(config.spec.method)).c_str(),
                 static_cast<long long>(m.spec_drafted_tokens),
                 static_cast<long long>(m.spec_accepted_tokens),
                 m.spec_drafted_tokens > 0 ? 100.0 * static_cast<double>(m.spec_accepted_tokens) /
                                                 static_cast<double>(m.spec_drafted_tokens)
                                           : 0.0,
                 static_cast<long long>(m.spec_decode_steps), static_cast<long long>(steps),
                 steps > 0 ? 1e3 * gen_s / steps : 0.0);
  }
  trace.write();
}

}  // namespace

void register_run(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", "generate text from a prompt");
  flags->engine.add(*cmd);
  flags->engine.add_trace(*cmd);
  flags->spec.add(*cmd);
  cmd->add_option("-p,--prompt", flags->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", flags->n_predict, "tokens to generate")->capture_default_str();
  cmd->add_option("--temp", flags->sampling.temperature, "temperature (0 = greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", flags->sampling.top_k, "top-k (0 = off)");
  cmd->add_option("--top-p", flags->sampling.top_p, "top-p (1 = off)");
  cmd->add_option("--min-p", flags->sampling.min_p, "min-p (0 = off)");
  cmd->add_option("--repeat-penalty", flags->sampling.repetition_penalty,
                  "repetition penalty (1 = off)");
  cmd->add_option("--presence-penalty", flags->sampling.presence_penalty, "presence penalty");
  cmd->add_option("--frequency-penalty", flags->sampling.frequency_penalty, "frequency penalty");
  cmd->add_option("--seed", flags->sampling.seed, "random seed");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "keep generating past end-of-sequence tokens");
  cmd->add_flag("--tokens", flags->print_tokens, "print generated token ids instead of text");
  cmd->callback([flags] { run(*flags); });
}

}  // namespace strata::tools
