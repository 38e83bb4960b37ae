// strata batch -m MODEL.gguf --input REQUESTS.jsonl --output RESULTS.jsonl [engine flags]
// Runs every request through the engine concurrently (submitted in file order).
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/offline.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/engine_flags.h"
#include "tools/spec_flags.h"

namespace strata::tools {
namespace {

struct BatchFlags {
  EngineFlags engine;
  ServingFlags serving;
  SpecFlags spec;
  std::string input, output;
};

template <class T>
T field(const nlohmann::json& j, const char* key, T fallback, size_t line) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error("line " + std::to_string(line) + ": field '" + key + "' has the wrong type");
  }
}

OfflineRequest parse_request(const nlohmann::json& j, size_t line, const Tokenizer& tok) {
  if (!j.is_object()) throw Error("line " + std::to_string(line) + ": not a JSON object");
  OfflineRequest r;
  r.id = j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump())
                          : std::to_string(line);
  if (j.contains("prompt_tokens")) {
    r.prompt = field<std::vector<int32_t>>(j, "prompt_tokens", {}, line);
  } else if (j.contains("prompt")) {
    r.prompt = tok.encode(field<std::string>(j, "prompt", "", line), tok.add_bos(), false);
  } else {
    throw Error("line " + std::to_string(line) + ": needs 'prompt' or 'prompt_tokens'");
  }
  auto& o = r.options;
  o.stop.max_tokens = field<int32_t>(j, "max_tokens", 16, line);
  o.sampling.temperature = field<float>(j, "temperature", 1.0f, line);
  o.sampling.top_k = field<int32_t>(j, "top_k", 0, line);
  o.sampling.top_p = field<float>(j, "top_p", 1.0f, line);
  o.sampling.seed = field<uint64_t>(j, "seed", 0, line);
  o.cache_salt = field<std::string>(j, "cache_salt", "", line);
  o.priority = field<int32_t>(j, "priority", 0, line);
  o.stop.ignore_eos = field<bool>(j, "ignore_eos", false, line);
  if (j.contains("stop")) {
    if (j["stop"].is_string()) {
      o.stop.stop_strings = {j["stop"].get<std::string>()};
    } else {
      o.stop.stop_strings = field<std::vector<std::string>>(j, "stop", {}, line);
    }
  }
  return r;
}

void run_batch(const BatchFlags& f) {
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ThreadPool pool(f.engine.thread_count());
  EngineConfig config =
      f.serving.config(f.engine.kv_dtype(), eog_tokens(tok), f.engine.head_modes(*model));
  std::unique_ptr<Model> draft;
  f.spec.apply(config, f.engine.load_options(), draft);
  EngineCore engine(*model, pool, config);

  std::ifstream in(f.input);
  if (!in) throw Error(f.input + ": cannot open");
  std::vector<OfflineRequest> requests;
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(f.input + ":" + std::to_string(n) + ": invalid JSON: " + e.what());
    }
    requests.push_back(parse_request(j, n, tok));
  }
  const auto results = generate(engine, &tok, requests);
  std::ofstream out(f.output);
  if (!out) throw Error(f.output + ": cannot open for writing");
  for (const auto& r : results) {
    nlohmann::json j = {{"id", r.id},
                        {"tokens", r.tokens},
                        {"text", r.text},
                        {"finish_reason", std::string(finish_reason_name(r.finish))},
                        {"prompt_tokens", r.n_prompt},
                        {"cached_prompt_tokens", r.n_cached_prompt},
                        {"ttft_ms", r.ttft_ms},
                        {"e2e_ms", r.e2e_ms}};
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  const auto m = engine.metrics();
  std::fprintf(
      stderr,
      "batch: %zu requests, %lld prompt tokens (%lld from the prefix cache), %lld generated, "
      "%lld steps, %lld preemptions\n",
      results.size(), static_cast<long long>(m.prompt_tokens_total),
      static_cast<long long>(m.prefix_hits_tokens),
      static_cast<long long>(m.generation_tokens_total), static_cast<long long>(m.steps),
      static_cast<long long>(m.preemptions));
}

}  // namespace

void register_batch(CLI::App& app) {
  auto f = std::make_shared<BatchFlags>();
  auto* cmd = app.add_subcommand("batch", "run a JSONL file of requests through the engine");
  f->engine.add(*cmd, false);
  f->serving.add(*cmd);
  f->spec.add(*cmd);
  cmd->add_option("--input", f->input, "requests, one JSON object per line")->required();
  cmd->add_option("--output", f->output, "results, one JSON object per line")->required();
  cmd->callback([f] { run_batch(*f); });
}

}  // namespace strata::tools
