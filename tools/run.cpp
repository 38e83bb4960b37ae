// strata run: generate text from a prompt, streaming only the generated text to stdout
// and one timing line to stderr.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "model/model.h"
#include "runner/sequence_runner.h"
#include "sample/sampler.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {
namespace {

struct RunFlags {
  EngineFlags engine;
  std::string prompt;
  int64_t n_predict = 128;
  SamplingParams sampling;
  bool ignore_eos = false;
  bool print_tokens = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run(const RunFlags& f) {
  const TraceFile trace(f.engine.trace);
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  model->set_tracer(trace.get());
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ThreadPool pool(f.engine.thread_count());
  SequenceRunnerOptions ro;
  ro.context_length = f.engine.ctx;
  ro.max_batch_tokens = f.engine.batch;
  ro.kv_type = f.engine.kv_dtype();
  ro.head_map = f.engine.sparse;
  SequenceRunner runner(*model, pool, ro);

  const auto prompt = tok.encode(f.prompt, tok.add_bos(), false);
  if (prompt.empty()) throw Error("the prompt encodes to no tokens");
  Sampler sampler(f.sampling, model->config().n_vocab);
  StreamingDecoder decoder(tok);
  GenerateOptions go;
  go.max_new_tokens = f.n_predict;
  go.ignore_eos = f.ignore_eos;
  go.tracer = trace.get();

  const auto t0 = std::chrono::steady_clock::now();
  double prompt_s = 0.0;
  size_t n_printed = 0;
  auto on_token = [&](int32_t id) {
    if (n_printed == 0) prompt_s = seconds_since(t0);
    if (f.print_tokens) {
      std::printf(n_printed == 0 ? "%d" : " %d", id);
    } else {
      const std::string text = decoder.push(id);
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    ++n_printed;
    std::fflush(stdout);
    return true;
  };
  const auto out = generate(runner, prompt, sampler, go,
                            [&](int32_t id) { return tok.is_eog(id); }, on_token);
  if (!f.print_tokens) {
    const std::string rest = decoder.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::fflush(stdout);
  const double total_s = seconds_since(t0);
  if (n_printed == 0) prompt_s = total_s;
  const double gen_s = total_s - prompt_s;
  const auto n_gen = static_cast<double>(out.size());
  // The first generated token comes from the prompt pass; decode speed counts the rest.
  std::fprintf(stderr,
               "\nprompt: %zu tokens, %.2f tok/s | generated: %zu tokens, %.2f tok/s\n",
               prompt.size(), static_cast<double>(prompt.size()) / std::max(prompt_s, 1e-9),
               out.size(), n_gen > 1 ? (n_gen - 1) / std::max(gen_s, 1e-9) : 0.0);
  trace.write();
}

}  // namespace

void register_run(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", "generate text from a prompt");
  flags->engine.add(*cmd);
  flags->engine.add_trace(*cmd);
  cmd->add_option("-p,--prompt", flags->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", flags->n_predict, "tokens to generate")->capture_default_str();
  cmd->add_option("--temp", flags->sampling.temperature, "temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", flags->sampling.top_k, "top-k (0 = off)");
  cmd->add_option("--top-p", flags->sampling.top_p, "top-p (1 = off)");
  cmd->add_option("--min-p", flags->sampling.min_p, "min-p (0 = off)");
  cmd->add_option("--repeat-penalty", flags->sampling.repetition_penalty, "repetition penalty (1 = off)");
  cmd->add_option("--presence-penalty", flags->sampling.presence_penalty, "presence penalty");
  cmd->add_option("--frequency-penalty", flags->sampling.frequency_penalty, "frequency penalty");
  cmd->add_option("--seed", flags->sampling.seed, "random seed");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "keep generating past end-of-sequence tokens");
  cmd->add_flag("--tokens", flags->print_tokens, "print generated token ids instead of text");
  cmd->callback([flags] { run(*flags); });
}

}  // namespace strata::tools
