// strata bench serve: a load generator for any OpenAI-compatible endpoint, measured at
// the client with vLLM benchmark_serving's metric definitions (docs/BENCHMARKS.md).
//   strata bench serve [--base-url URL] [--endpoint /v1/completions|/v1/chat/completions]
//       [--dataset random|shared-prefix|long-doc|FILE.jsonl] [--num-prompts N]
//       [--request-rate R|inf] [--burstiness B] [--max-concurrency C] [--ignore-eos]
//       [--model-path MODEL.gguf] [--result-json FILE] [--plot FILE.svg] ...
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "loadgen/arrival.h"
#include "loadgen/dataset.h"
#include "loadgen/http_client.h"
#include "loadgen/openai_protocol.h"
#include "loadgen/progress.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/stats.h"
#include "loadgen/svg_plot.h"
#include "loadgen/token_source.h"
#include "tools/commands.h"

namespace strata::tools {
namespace {

using nlohmann::json;
namespace lg = strata::loadgen;

struct BenchServeFlags {
  std::string base_url = "http://127.0.0.1:8080";
  std::string endpoint = "/v1/completions";
  std::string api_key;
  std::string model;
  std::string model_path;
  lg::DatasetOptions dataset;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int64_t max_concurrency = 0;
  bool ignore_eos = false;
  double temperature = 0;
  bool prompt_ids = false;
  std::string extra_body;
  std::string percentiles = "50,90,99";
  std::vector<std::string> goodput;
  std::string result_json;
  std::string plot;
  bool progress = false;
  double timeout_s = 600;
};

json config_json(const BenchServeFlags& f, double rate, const std::string& model) {
  const auto& d = f.dataset;
  return {{"base_url", f.base_url},
          {"endpoint", f.endpoint},
          {"api_key", f.api_key.empty() ? json(nullptr) : json("(set)")},
          {"model", model},
          {"model_path", f.model_path.empty() ? json(nullptr) : json(f.model_path)},
          {"tokenizer", f.model_path.empty() ? "server" : "local"},
          {"dataset", d.name},
          {"num_prompts", d.num_prompts},
          {"input_len", d.input_len},
          {"output_len", d.output_len},
          {"range_ratio", d.range_ratio},
          {"prefix_len", d.prefix_len},
          {"num_prefixes", d.num_prefixes},
          {"question_len", d.question_len},
          {"doc_len_min", d.doc_len_min},
          {"doc_len_max", d.doc_len_max},
          {"doc_repeat_rate", d.doc_repeat_rate},
          {"seed", d.seed},
          {"request_rate", std::isinf(rate) ? json("inf") : json(rate)},
          {"burstiness", f.burstiness},
          {"max_concurrency", f.max_concurrency > 0 ? json(f.max_concurrency) : json(nullptr)},
          {"ignore_eos", f.ignore_eos},
          {"temperature", f.temperature},
          {"prompt_ids", f.prompt_ids},
          {"extra_body", f.extra_body.empty() ? json(nullptr) : json::parse(f.extra_body)},
          {"percentiles", lg::parse_percentiles(f.percentiles)},
          {"goodput", f.goodput},
          {"result_json", f.result_json.empty() ? json(nullptr) : json(f.result_json)},
          {"plot", f.plot.empty() ? json(nullptr) : json(f.plot)},
          {"progress", f.progress},
          {"timeout_s", f.timeout_s}};
}

// The served model's id from GET /v1/models (its first entry).
std::string served_model(lg::HttpClient& client) {
  const auto r = client.get("/v1/models");
  if (r.status != 200) {
    throw Error("GET /v1/models: HTTP " + std::to_string(r.status) + ": " + r.body +
                " (give --model)");
  }
  try {
    return json::parse(r.body).at("data").at(0).at("id").get<std::string>();
  } catch (const json::exception& e) {
    throw Error(std::string("GET /v1/models: no model id in the response (give --model): ") +
                e.what());
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot open for writing");
  out << text;
  if (!out.flush()) throw Error(path + ": write failed");
}

void bench_serve(const BenchServeFlags& f) {
  // Everything is checked before the first request.
  if (f.endpoint != "/v1/completions" && f.endpoint != "/v1/chat/completions") {
    throw Error("--endpoint: expected /v1/completions or /v1/chat/completions, got '" + f.endpoint +
                "'");
  }
  const bool chat = f.endpoint == "/v1/chat/completions";
  if (f.prompt_ids && chat) throw Error("--prompt-ids: only with --endpoint /v1/completions");
  lg::validate(f.dataset);
  const double rate = lg::parse_rate(f.request_rate);
  lg::ArrivalProcess check_arrivals(rate, f.burstiness, f.dataset.seed);
  if (f.max_concurrency < 0) throw Error("--max-concurrency: must be >= 0 (0 = unlimited)");
  if (!(f.timeout_s > 0)) throw Error("--timeout: must be > 0");
  if (!(f.temperature >= 0)) throw Error("--temperature: must be >= 0");
  const auto percentiles = lg::parse_percentiles(f.percentiles);
  const lg::Slo slo = lg::parse_slo(f.goodput);
  json extra = json::object();
  if (!f.extra_body.empty()) {
    try {
      extra = json::parse(f.extra_body);
    } catch (const json::exception& e) {
      throw Error(std::string("--extra-body: invalid JSON: ") + e.what());
    }
    if (!extra.is_object()) throw Error("--extra-body: expected a JSON object");
  }
  lg::RunOptions run;
  run.url = lg::parse_base_url(f.base_url);
  run.endpoint = f.endpoint;
  run.api_key = f.api_key;
  run.request_rate = rate;
  run.burstiness = f.burstiness;
  run.max_concurrency = f.max_concurrency;
  run.seed = f.dataset.seed;
  run.timeout_s = f.timeout_s;

  lg::HttpClient client(run.url, f.api_key, f.timeout_s);
  const std::string model = f.model.empty() ? served_model(client) : f.model;
  auto tokens =
      f.model_path.empty() ? lg::remote_token_source(client) : lg::local_token_source(f.model_path);
  std::fprintf(stderr, "bench serve: building %lld prompts (%s, tokenizer: %s)\n",
               static_cast<long long>(f.dataset.num_prompts), f.dataset.name.c_str(),
               f.model_path.empty() ? "the server's /tokenize" : f.model_path.c_str());
  const auto prompts = lg::build_dataset(f.dataset, *tokens);

  lg::RequestOptions ro;
  ro.chat = chat;
  ro.model = model;
  ro.token_ids = f.prompt_ids;
  ro.ignore_eos = f.ignore_eos;
  ro.temperature = f.temperature;
  ro.extra = extra;
  std::vector<lg::RequestSpec> specs;
  specs.reserve(prompts.size());
  for (const auto& p : prompts) {
    specs.push_back({lg::request_body(p, ro).dump(), static_cast<int64_t>(p.ids.size())});
  }

  std::fprintf(
      stderr, "bench serve: %zu requests to %s%s, rate %s, burstiness %g, concurrency %s\n",
      specs.size(), f.base_url.c_str(), f.endpoint.c_str(), f.request_rate.c_str(), f.burstiness,
      f.max_concurrency > 0 ? std::to_string(f.max_concurrency).c_str() : "unlimited");
  const bool show_progress = f.progress || ::isatty(STDERR_FILENO);
  lg::ProgressBar bar;
  std::function<void(const lg::Progress&)> on_progress;
  if (show_progress) on_progress = [&bar](const lg::Progress& p) { bar.update(p); };
  const lg::RunResult result = lg::run_benchmark(run, specs, on_progress);
  bar.finish();

  const lg::Summary summary = lg::summarize(result.records, result.duration_s, percentiles, slo);
  const std::string table = lg::summary_table(summary);
  std::fwrite(table.data(), 1, table.size(), stdout);
  std::fflush(stdout);
  if (!f.result_json.empty()) {
    const json config = config_json(f, rate, model);
    write_file(f.result_json, lg::result_json(summary, config, result.records).dump(2) + "\n");
  }
  if (!f.plot.empty()) {
    const std::string title =
        "strata bench serve: " + model + " " + f.endpoint + ", " + f.dataset.name + ", rate " +
        f.request_rate +
        (f.max_concurrency > 0 ? ", concurrency " + std::to_string(f.max_concurrency)
                               : std::string());
    write_file(f.plot, lg::render_svg(result.records, summary, title));
  }
  if (summary.completed == 0) {
    throw Error("all " + std::to_string(summary.failed) + " requests failed");
  }
}

}  // namespace

void register_bench_serve(CLI::App& bench) {
  auto f = std::make_shared<BenchServeFlags>();
  auto* cmd = bench.add_subcommand(
      "serve", "load-test an OpenAI-compatible server (TTFT, TPOT, ITL, E2E, throughput, goodput)");
  cmd->add_option("--base-url", f->base_url, "server URL: http://HOST[:PORT][/PREFIX]")
      ->capture_default_str();
  cmd->add_option("--endpoint", f->endpoint, "/v1/completions or /v1/chat/completions")
      ->capture_default_str();
  cmd->add_option("--api-key", f->api_key, "sent as Authorization: Bearer KEY");
  cmd->add_option("--model", f->model, "model name sent in requests (default: GET /v1/models)");
  cmd->add_option("--model-path", f->model_path,
                  "the target model's GGUF, to tokenize locally (default: the server's "
                  "/tokenize and /detokenize)");
  auto& d = f->dataset;
  cmd->add_option("--dataset", d.name, "random, shared-prefix, long-doc or FILE.jsonl")
      ->capture_default_str();
  cmd->add_option("--num-prompts", d.num_prompts, "requests to send")->capture_default_str();
  cmd->add_option("--input-len", d.input_len, "random: prompt tokens after the prefix")
      ->capture_default_str();
  cmd->add_option("--output-len", d.output_len,
                  "output tokens asked per request (max_tokens; JSONL default)")
      ->capture_default_str();
  cmd->add_option("--range-ratio", d.range_ratio,
                  "random: input and output lengths uniform in [L x (1-r), L x (1+r)]")
      ->capture_default_str();
  cmd->add_option("--prefix-len", d.prefix_len,
                  "random: tokens of a prefix shared by all prompts; shared-prefix: tokens of "
                  "each system prompt")
      ->capture_default_str();
  cmd->add_option("--num-prefixes", d.num_prefixes,
                  "shared-prefix: distinct system prompts (num-prompts / K questions each)")
      ->capture_default_str();
  cmd->add_option("--question-len", d.question_len, "shared-prefix, long-doc: question tokens")
      ->capture_default_str();
  cmd->add_option("--doc-len-min", d.doc_len_min, "long-doc: shortest document, tokens")
      ->capture_default_str();
  cmd->add_option("--doc-len-max", d.doc_len_max, "long-doc: longest document, tokens")
      ->capture_default_str();
  cmd->add_option("--doc-repeat-rate", d.doc_repeat_rate,
                  "long-doc: probability that a request asks about a document already sent")
      ->capture_default_str();
  cmd->add_option("--seed", d.seed, "seed of the dataset and the arrival process")
      ->capture_default_str();
  cmd->add_option("--request-rate", f->request_rate,
                  "requests/s (gamma-distributed gaps), inf = all at once")
      ->capture_default_str();
  cmd->add_option("--burstiness", f->burstiness,
                  "gamma shape of the gaps: 1 = Poisson, < 1 burstier, > 1 steadier")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", f->max_concurrency,
                  "requests in flight at most; later arrivals wait at the client (0 = unlimited)")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", f->ignore_eos,
                "ask for exactly the output length (ignore_eos, min_tokens = max_tokens)");
  cmd->add_option("--temperature", f->temperature, "sampling temperature")->capture_default_str();
  cmd->add_flag("--prompt-ids", f->prompt_ids,
                "/v1/completions: send prompts as token-id arrays instead of text");
  cmd->add_option("--extra-body", f->extra_body,
                  "a JSON object merged into every request body, e.g. '{\"top_k\": 1}'");
  cmd->add_option("--percentiles", f->percentiles, "latency percentiles to report")
      ->capture_default_str();
  cmd->add_option("--goodput", f->goodput,
                  "SLOs for goodput (requests/s meeting all): ttft:MS tpot:MS e2el:MS");
  cmd->add_option("--result-json", f->result_json, "write the summary, config and every request");
  cmd->add_option("--plot", f->plot,
                  "write an SVG: TTFT/TPOT/E2E CDFs and output tokens/s over time");
  cmd->add_flag("--progress", f->progress, "progress bar on stderr even when it is not a TTY");
  cmd->add_option("--timeout", f->timeout_s,
                  "seconds to wait for a connection, a write or the next bytes of a response")
      ->capture_default_str();
  cmd->callback([f] { bench_serve(*f); });
}

}  // namespace strata::tools
