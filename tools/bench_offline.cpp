// strata bench offline: the serving engine's effects, each on and off on the same
// workload, in one process:
//   throughput  N requests (prompt P, output O) all at once vs one at a time
//   prefix      TTFT of a request whose long prefix is cached vs not cached
//   chunked     decoders' worst inter-token gap while a long prompt arrives, with
//               chunked prefill on vs off, and the long prompt's TTFT
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"
#include "engine/offline.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/engine_flags.h"

namespace strata::tools {
namespace {

struct OfflineBenchFlags {
  EngineFlags engine;
  ServingFlags serving;
  std::string scenario = "throughput";
  int n_requests = 32;
  int prompt_len = 64;
  int output_len = 256;
  int prefix_len = 2000;
  int long_prompt = 8000;
  int n_decoders = 8;
};

std::vector<int32_t> random_prompt(std::mt19937& rng, int n, int64_t n_vocab) {
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> p = {1};
  while (static_cast<int>(p.size()) < n) p.push_back(tok(rng));
  return p;
}

RequestOptions fixed_length(int n) {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = n;
  o.stop.ignore_eos = true;
  return o;
}

void throughput(Model& model, ThreadPool& pool, const OfflineBenchFlags& f) {
  std::mt19937 rng(1);
  std::vector<OfflineRequest> reqs;
  for (int i = 0; i < f.n_requests; ++i) {
    reqs.push_back({std::to_string(i), random_prompt(rng, f.prompt_len, model.config().n_vocab),
                    fixed_length(f.output_len)});
  }
  auto cfg = f.serving.config(f.engine.kv_dtype(), {}, f.engine.head_modes(model));
  cfg.tracer = model.tracer();  // --trace: set on the model by run_offline_bench
  cfg.prefix_cache = false;
  auto run = [&](bool together) {
    EngineCore engine(model, pool, cfg);
    const double t0 = steady_now_s();
    int64_t out = 0;
    if (together) {
      for (const auto& r : generate(engine, nullptr, reqs))
        out += static_cast<int64_t>(r.tokens.size());
    } else {
      for (const auto& q : reqs)
        out += static_cast<int64_t>(generate(engine, nullptr, {q})[0].tokens.size());
    }
    return static_cast<double>(out) / (steady_now_s() - t0);
  };
  const double one = run(false);
  const double all = run(true);
  const double gflop = 2 * model.matmul_params() * all / 1e9;
  std::printf("throughput: %d requests x (prompt %d, output %d), %d threads\n", f.n_requests,
              f.prompt_len, f.output_len, pool.size());
  std::printf("  one at a time:        %8.2f output tok/s\n", one);
  std::printf(
      "  continuous batching:  %8.2f output tok/s  (%.2fx; %.1f GFLOP/s of matmul incl. prefill)\n",
      all, all / one, gflop);
}

void prefix(Model& model, ThreadPool& pool, const OfflineBenchFlags& f) {
  std::mt19937 rng(2);
  const auto shared = random_prompt(rng, f.prefix_len, model.config().n_vocab);
  auto cfg = f.serving.config(f.engine.kv_dtype(), {}, f.engine.head_modes(model));
  cfg.tracer = model.tracer();  // --trace: set on the model by run_offline_bench
  cfg.prefix_cache = true;
  EngineCore engine(model, pool, cfg);
  auto ttft = [&](int suffix_seed) {
    auto p = shared;
    std::mt19937 r2(static_cast<uint32_t>(suffix_seed));
    for (int i = 0; i < 16; ++i) p.push_back(3 + static_cast<int32_t>(r2() % 400));
    const auto res = generate(engine, nullptr, {{"q", p, fixed_length(1)}})[0];
    return std::make_pair(res.ttft_ms, res.n_cached_prompt);
  };
  const auto cold = ttft(10);
  const auto warm = ttft(11);
  std::printf("prefix: %d-token shared prefix + 16-token question, %d threads\n", f.prefix_len,
              pool.size());
  std::printf("  not cached: TTFT %9.1f ms (%d prompt tokens from cache)\n", cold.first,
              cold.second);
  std::printf("  cached:     TTFT %9.1f ms (%d prompt tokens from cache)  -> %.1fx lower\n",
              warm.first, warm.second, cold.first / warm.first);
}

void chunked(Model& model, ThreadPool& pool, const OfflineBenchFlags& f, int64_t chunk) {
  std::mt19937 rng(3);
  auto cfg = f.serving.config(f.engine.kv_dtype(), {}, f.engine.head_modes(model));
  cfg.tracer = model.tracer();  // --trace: set on the model by run_offline_bench
  cfg.prefix_cache = false;
  cfg.scheduler.prefill_chunk = chunk;
  EngineCore engine(model, pool, cfg);
  std::vector<RequestId> decoders;
  for (int i = 0; i < f.n_decoders; ++i) {
    decoders.push_back(engine.add_request(random_prompt(rng, f.prompt_len, model.config().n_vocab),
                                          fixed_length(100000)));
  }
  std::vector<double> last(decoders.size(), -1);
  std::vector<int> count(decoders.size(), 0);
  double worst_before = 0, worst_during = 0, long_ttft = -1, long_added = -1;
  RequestId long_id = 0;
  int after_long = 0;
  while (after_long < 5) {
    const auto outs = engine.step();
    const double t = steady_now_s();
    for (const auto& o : outs) {
      if (o.id == long_id && !o.new_tokens.empty() && long_ttft < 0) long_ttft = t - long_added;
      const auto it = std::find(decoders.begin(), decoders.end(), o.id);
      if (it == decoders.end() || o.new_tokens.empty()) continue;
      const size_t i = static_cast<size_t>(it - decoders.begin());
      if (last[i] >= 0) {
        const double gap = t - last[i];
        (long_id == 0 ? worst_before : worst_during) =
            std::max(long_id == 0 ? worst_before : worst_during, gap);
      }
      last[i] = t;
      ++count[i];
    }
    if (long_id == 0 && *std::min_element(count.begin(), count.end()) >= 3) {
      long_id = engine.add_request(random_prompt(rng, f.long_prompt, model.config().n_vocab),
                                   fixed_length(1));
      long_added = steady_now_s();
    }
    if (long_ttft >= 0) ++after_long;
  }
  for (RequestId id : decoders) engine.abort(id);
  while (engine.has_work()) engine.step();
  std::printf(
      "  prefill chunk %-5s worst decode gap before %7.1f ms, while the long prompt prefills %8.1f "
      "ms; "
      "long prompt TTFT %8.1f ms\n",
      chunk > 0 ? std::to_string(chunk).c_str() : "off", worst_before * 1e3, worst_during * 1e3,
      long_ttft * 1e3);
}

void run_offline_bench(const OfflineBenchFlags& f) {
  const TraceFile trace(f.engine.trace);
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  model->set_tracer(trace.get());
  ThreadPool pool(f.engine.thread_count());
  if (f.scenario == "throughput") {
    throughput(*model, pool, f);
  } else if (f.scenario == "prefix") {
    prefix(*model, pool, f);
  } else if (f.scenario == "chunked") {
    std::printf("chunked: %d decoders (prompt %d) + one %d-token prompt, %d threads\n",
                f.n_decoders, f.prompt_len, f.long_prompt, pool.size());
    chunked(*model, pool, f, f.serving.prefill_chunk > 0 ? f.serving.prefill_chunk : 512);
    chunked(*model, pool, f, 0);
  } else {
    throw Error("--scenario: expected throughput, prefix or chunked");
  }
  trace.write();
}

}  // namespace

void register_bench_offline(CLI::App& bench) {
  auto f = std::make_shared<OfflineBenchFlags>();
  auto* cmd =
      bench.add_subcommand("offline", "serving-engine effects on a synthetic workload, on vs off");
  f->engine.add(*cmd, false);
  f->engine.add_trace(*cmd);
  f->serving.add(*cmd);
  cmd->add_option("--scenario", f->scenario, "throughput, prefix or chunked")
      ->capture_default_str();
  cmd->add_option("--requests", f->n_requests, "throughput: requests")->capture_default_str();
  cmd->add_option("--prompt-len", f->prompt_len, "prompt tokens (throughput, chunked decoders)")
      ->capture_default_str();
  cmd->add_option("--output-len", f->output_len, "throughput: output tokens")
      ->capture_default_str();
  cmd->add_option("--prefix-len", f->prefix_len, "prefix: shared prefix tokens")
      ->capture_default_str();
  cmd->add_option("--long-prompt", f->long_prompt, "chunked: long prompt tokens")
      ->capture_default_str();
  cmd->add_option("--decoders", f->n_decoders, "chunked: decoding requests")->capture_default_str();
  cmd->callback([f] { run_offline_bench(*f); });
}

}  // namespace strata::tools
