// strata bench roofline | model: the machine's limits, and llama-bench style
// prompt-processing / generation speed of a model on it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/fp16.h"
#include "core/huge_buffer.h"
#include "engine/engine_core.h"
#include "kernels/cpu/roofline.h"
#include "kernels/quant/traits.h"
#include "kv/kv_manager.h"
#include "kv/kv_quant.h"
#include "model/model.h"
#include "runner/model_runner.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {
namespace {

struct BenchModelFlags {
  EngineFlags engine;
  std::vector<int64_t> n_prompt = {512};
  std::vector<int64_t> n_gen = {128};
  std::vector<int64_t> depth = {0};
  std::vector<int64_t> batch = {1};
  int repetitions = 3;
  std::string output = "md";
  std::string fill = "model";  // how the -d context is filled: model (computed) or synthetic
  bool roofline = false;       // add each test's fraction of the machine's limits
  bool no_warmup = false;      // skip the untimed run before each test's repetitions
};

// The machine's limits measured in the same process as the tests, so that a figure and
// its yardstick see the same (shared, noisy) machine: the AVX2 f32 FMA peak once, and the
// read bandwidth right before and right after each test (the better of the two: a
// neighbour's burst only ever lowers a probe, and a dip that happened to hit the probe
// once made decode look faster than the memory could go). The buffer is on huge pages,
// as the weights are.
class RooflineYardstick {
 public:
  explicit RooflineYardstick(ThreadPool& pool)
      : pool_(pool), buffer_(kBytes), fma_gflops_(kernels::measure_fma_gflops(pool)) {
    auto* p = reinterpret_cast<float*>(buffer_.data());
    pool.parallel_for(static_cast<int64_t>(kBytes / sizeof(float)), [&](int64_t lo, int64_t hi) {
      std::fill(p + lo, p + hi, 1.0f);  // touch every page: untouched ones all read one zero page
    });
  }
  double fma_gflops() const { return fma_gflops_; }
  double read_gbps() { return kernels::measure_read_gbps(pool_, buffer_.data(), kBytes); }

 private:
  static constexpr size_t kBytes = size_t{512} << 20;
  ThreadPool& pool_;
  HugePageBuffer buffer_;
  double fma_gflops_;
};

// Drives `n_seqs` sequences through the ModelRunner with plans of its own: each gets
// `depth` tokens of context first (untimed), then the timed work. The KV cache and
// manager come from the engine's own sizing rule (plan_kv).
class BenchRunner {
 public:
  BenchRunner(Model& model, ThreadPool& pool, int64_t n_seqs, int64_t max_tokens, int64_t chunk,
              DType kv_type, const HeadModes& modes)
      : chunk_(chunk) {
    EngineConfig c;
    const int64_t bs = c.block_size;
    c.kv_cache_tokens = n_seqs * ((max_tokens + bs - 1) / bs) * bs;
    c.kv_type = kv_type;
    c.head_modes = modes;
    c.prefix_cache = false;
    c.scheduler.max_seqs = static_cast<int32_t>(n_seqs);
    c.scheduler.max_batch_tokens = chunk;
    c.scheduler.prefill_chunk = chunk;
    const KvPlan plan = plan_kv(model, c);
    runner_ = std::make_unique<ModelRunner>(model, pool, plan.cache, std::vector<int32_t>{});
    kv_ = std::make_unique<KvManager>(plan.manager);
    capacity_ = c.kv_cache_tokens / n_seqs;
    RequestOptions greedy;
    greedy.sampling.temperature = 0.0f;
    for (int64_t i = 0; i < n_seqs; ++i) {
      seqs_.push_back(std::make_unique<Request>(
          static_cast<RequestId>(i + 1), std::vector<int32_t>{}, greedy, model.config().n_vocab));
    }
  }

  // Fills `n` positions of every sequence with random K/V written straight into the
  // cache, without running the model: decode and prefill speed on top of a context do
  // not depend on what the context holds, and a 32K-token context costs seconds this
  // way instead of a long prefill.
  void fill_synthetic(int64_t n, std::mt19937& rng) {
    KvCache& cache = runner_->cache();
    const auto& kc = cache.config();
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> tile(static_cast<size_t>(kc.block_size * kc.head_dim));
    std::vector<uint16_t> half(tile.size());
    auto randomize = [&](uint8_t* dst) {
      for (auto& x : tile) x = normal(rng);
      if (kc.dtype == DType::F32) {
        std::memcpy(dst, tile.data(), tile.size() * sizeof(float));
      } else if (kv_quant::quantized(kc.dtype)) {
        // Quantized tiles are int8 plus scales (kv/kv_quant.h); keys or values alike.
        for (int64_t j = 0; j < kc.block_size; ++j) {
          kv_quant::store(kc.dtype, dst, true, tile.data() + j * kc.head_dim, j, kc.block_size,
                          kc.head_dim);
        }
      } else {
        const bool bf16 =
            kc.dtype == DType::BF16;  // random either way, so the pairing does not matter
        for (size_t j = 0; j < tile.size(); ++j)
          half[j] = bf16 ? fp32_to_bf16(tile[j]) : fp32_to_fp16(tile[j]);
        std::memcpy(dst, half.data(), half.size() * sizeof(uint16_t));
      }
    };
    for (auto& s : seqs_) {
      // A chunk at a time, so sparse attention's stream pool only ever holds the window.
      for (int64_t left = n; left > 0;) {
        const int64_t take = std::min(left, chunk_);
        const size_t first_new = s->kv.block_table().size(),
                     first_new_stream = s->kv.stream_table().size();
        const int64_t len = s->n_computed + take;
        left -= take;
        if (len > capacity_ || !kv_->allocate(s->kv, len))
          throw Error("bench: context exceeds the KV cache");
        for (int64_t l = 0; l < kc.n_layers; ++l) {
          for (int64_t h = 0; h < kc.n_kv_heads; ++h) {
            const bool streaming = cache.streaming(l, h);
            const auto& table = streaming ? s->kv.stream_table() : s->kv.block_table();
            for (size_t i = streaming ? first_new_stream : first_new; i < table.size(); ++i) {
              const int32_t block = table[i];
              if (block < 0) continue;
              randomize(cache.k_tile(l, block, h));
              if (!kc.latent) randomize(cache.v_tile(l, block, h));  // MLA: K tiles only
            }
          }
        }
        s->tokens.resize(static_cast<size_t>(len), 3);
        s->n_computed = len;
        kv_->release_out_of_window(s->kv, len);
      }
    }
  }

  // K/V bytes the sequences hold now (both pools).
  uint64_t kv_bytes() const {
    const auto bs = static_cast<uint64_t>(kv_->block_size());
    return static_cast<uint64_t>(kv_->usage().used) * bs * runner_->cache().full_bytes_per_token() +
           static_cast<uint64_t>(kv_->stream_usage().used) * bs *
               runner_->cache().stream_bytes_per_token();
  }

  // Appends `n` random tokens to every sequence, `chunk_` tokens per forward pass in total.
  void append(int64_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int32_t> tok(
        3, static_cast<int32_t>(runner_->model().config().n_vocab - 1));
    std::vector<int64_t> left(seqs_.size(), n);
    for (;;) {
      SchedulerOutput plan;
      int64_t n_tokens = 0;
      for (size_t s = 0; s < seqs_.size(); ++s) {
        Request& r = *seqs_[s];
        const int64_t take = std::min(left[s], chunk_ - n_tokens);
        if (take <= 0) continue;
        for (int64_t i = 0; i < take; ++i) r.tokens.push_back(tok(rng));
        if (r.n_computed + take > capacity_ || !kv_->allocate(r.kv, r.n_computed + take)) {
          throw Error("bench: context exceeds the KV cache");
        }
        plan.scheduled.push_back({&r, static_cast<int32_t>(take)});
        n_tokens += take;
        left[s] -= take;
      }
      if (plan.empty()) return;
      runner_->execute(plan);
      for (const auto& e : plan.scheduled) {
        e.request->n_computed += e.n_tokens;
        kv_->release_out_of_window(e.request->kv, e.request->n_computed);
      }
    }
  }

 private:
  int64_t chunk_;
  int64_t capacity_ = 0;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvManager> kv_;
  std::vector<std::unique_ptr<Request>> seqs_;
};

void bench_model(const BenchModelFlags& f) {
  const TraceFile trace(f.engine.trace);
  const auto load_start = std::chrono::steady_clock::now();
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  const std::chrono::duration<double> load_time = std::chrono::steady_clock::now() - load_start;
  std::fprintf(stderr, "model load: %.2f s\n", load_time.count());
  model->set_tracer(trace.get());
  const int threads = f.engine.thread_count();
  ThreadPool pool(threads);
  const HeadModes modes = f.engine.head_modes(*model);
  if (!modes.dense()) std::fprintf(stderr, "sparse attention: %s\n", modes.describe().c_str());
  nlohmann::json results = nlohmann::json::array();
  std::unique_ptr<RooflineYardstick> yardstick;
  const double params = model->matmul_params();  // 2 x params FLOPs per token
  if (f.roofline) yardstick = std::make_unique<RooflineYardstick>(pool);
  const double bytes_per_token = static_cast<double>(model->weight_bytes_per_token());
  if (f.output == "md") {
    std::printf(
        "| model | test | depth | batch | threads | KV MiB | t/s "
        "|%s\n|---|---|---:|---:|---:|---:|---:|%s\n",
        f.roofline ? " roofline |" : "", f.roofline ? "---|" : "");
  }
  double read_gbps = 0;  // the better of the probes before and after the test being reported
  auto report = [&](const std::string& test, int64_t np, int64_t ng, int64_t depth, int64_t batch,
                    const std::vector<double>& tps, uint64_t kv_bytes) {
    double mean = 0, var = 0;
    for (double x : tps) mean += x;
    mean /= static_cast<double>(tps.size());
    for (double x : tps) var += (x - mean) * (x - mean);
    const double sd = tps.size() > 1 ? std::sqrt(var / static_cast<double>(tps.size() - 1)) : 0.0;
    results.push_back({{"test", test},
                       {"n_prompt", np},
                       {"n_gen", ng},
                       {"depth", depth},
                       {"batch", batch},
                       {"threads", threads},
                       {"tokens_per_s_mean", mean},
                       {"tokens_per_s_std", sd},
                       {"kv_bytes", kv_bytes},
                       {"kv_type", dtype_name(f.engine.kv_dtype())}});
    // Single-sequence decode is bound by reading the weights once per token; prefill and
    // batched decode by arithmetic (matmul FLOPs against the AVX2 f32 FMA peak).
    std::string roof;
    if (yardstick) {
      auto& j = results.back();
      const bool memory_bound = ng > 0 && batch == 1;
      const double gflops = 2 * params * mean / 1e9;
      j["read_gbps"] = read_gbps;
      j["fma_gflops"] = yardstick->fma_gflops();
      j["matmul_gflops"] = gflops;
      j["weight_gbps"] = bytes_per_token * mean / 1e9;
      j["bandwidth_fraction"] = bytes_per_token * mean / 1e9 / read_gbps;
      j["fma_fraction"] = gflops / yardstick->fma_gflops();
      char buf[128];
      if (memory_bound) {
        std::snprintf(buf, sizeof buf, " %.0f%% of %.1f GB/s |",
                      100.0 * j["bandwidth_fraction"].get<double>(), read_gbps);
      } else {
        std::snprintf(buf, sizeof buf, " %.0f%% of %.0f GFLOP/s |",
                      100.0 * j["fma_fraction"].get<double>(), yardstick->fma_gflops());
      }
      roof = buf;
    }
    if (f.output == "md") {
      std::printf("| %s | %s | %lld | %lld | %d | %.1f | %.2f ± %.2f |%s\n",
                  model->config().name.c_str(), test.c_str(), static_cast<long long>(depth),
                  static_cast<long long>(batch), threads, static_cast<double>(kv_bytes) / (1 << 20),
                  mean, sd, roof.c_str());
      std::fflush(stdout);
    }
  };
  if (f.fill != "model" && f.fill != "synthetic")
    throw Error("--fill: expected model or synthetic");
  const bool synthetic = f.fill == "synthetic";
  std::mt19937 rng(1234);
  for (int64_t depth : f.depth) {
    for (int64_t batch : f.batch) {
      for (int64_t np : f.n_prompt) {
        if (np <= 0) continue;
        if (!f.no_warmup) {  // the model's batch buffers reach this size, untimed
          BenchRunner warm(*model, pool, batch, np, f.engine.batch, f.engine.kv_dtype(), modes);
          warm.append(np, rng);
        }
        if (yardstick) read_gbps = yardstick->read_gbps();
        std::vector<double> tps;
        uint64_t kv_bytes = 0;
        for (int r = 0; r < f.repetitions; ++r) {
          BenchRunner runner(*model, pool, batch, depth + np, f.engine.batch, f.engine.kv_dtype(),
                             modes);
          synthetic ? runner.fill_synthetic(depth, rng) : runner.append(depth, rng);
          const double t0 = steady_now_s();
          runner.append(np, rng);
          tps.push_back(static_cast<double>(np * batch) / (steady_now_s() - t0));
          kv_bytes = runner.kv_bytes();
        }
        if (yardstick) read_gbps = std::max(read_gbps, yardstick->read_gbps());
        report("pp" + std::to_string(np), np, 0, depth, batch, tps, kv_bytes);
      }
      for (int64_t ng : f.n_gen) {
        if (ng <= 0) continue;
        if (!f.no_warmup) {  // one decode step of this batch, untimed
          BenchRunner warm(*model, pool, batch, 2, f.engine.batch, f.engine.kv_dtype(), modes);
          warm.append(1, rng);
          warm.append(1, rng);
        }
        if (yardstick) read_gbps = yardstick->read_gbps();
        std::vector<double> tps;
        uint64_t kv_bytes = 0;
        for (int r = 0; r < f.repetitions; ++r) {
          BenchRunner runner(*model, pool, batch, depth + ng + 1, f.engine.batch,
                             f.engine.kv_dtype(), modes);
          synthetic ? runner.fill_synthetic(depth, rng) : runner.append(depth, rng);
          runner.append(1, rng);
          const double t0 = steady_now_s();
          for (int64_t i = 0; i < ng; ++i) runner.append(1, rng);
          tps.push_back(static_cast<double>(ng * batch) / (steady_now_s() - t0));
          kv_bytes = runner.kv_bytes();
        }
        if (yardstick) read_gbps = std::max(read_gbps, yardstick->read_gbps());
        report("tg" + std::to_string(ng), 0, ng, depth, batch, tps, kv_bytes);
      }
    }
  }
  if (f.output == "json") std::printf("%s\n", results.dump(2).c_str());
  const ExpertLoad& load = model->expert_load();
  if (f.output != "json" && load.n_layers() > 0) {
    // Random tokens route unevenly too: the figure uneven serving traffic is compared to.
    std::printf("\nexpert load, max/mean tokens per expert by layer (worst %.2f):",
                load.max_imbalance());
    for (int64_t l = 0; l < load.n_layers(); ++l)
      if (load.layer_imbalance(l) > 0) std::printf(" %.2f", load.layer_imbalance(l));
    std::printf("\n");
  }
  trace.write();
}

void bench_roofline(int threads_flag, double gib, const std::string& model_path) {
  const int threads = threads_flag > 0 ? threads_flag : ThreadPool::default_threads();
  ThreadPool pool(threads);
  kernels::RooflineOptions opt;
  opt.buffer_bytes = static_cast<size_t>(gib * (1 << 30));
  const auto r = kernels::measure_roofline(pool, opt);
  std::printf("threads:          %d (kernels: %s)\n", r.threads,
              kernels::cpu_kernels_name().c_str());
  std::printf("read bandwidth:   %.2f GB/s\n", r.read_gbps);
  std::printf("copy bandwidth:   %.2f GB/s\n", r.copy_gbps);
  std::printf("triad bandwidth:  %.2f GB/s\n", r.triad_gbps);
  std::printf("f32 FMA peak:     %.1f GFLOP/s (%s)\n", r.fma_gflops,
              r.avx2 ? "AVX2, 256-bit" : "scalar");
  if (r.fma512_gflops > 0)
    std::printf("f32 FMA peak:     %.1f GFLOP/s (AVX-512)\n", r.fma512_gflops);
  if (r.int8_gops > 0) {
    std::printf("int8 dot peak:    %.1f GOP/s (%s; u8 x s8 multiply-adds, 2 ops each)\n",
                r.int8_gops, r.int8_instruction);
  }
  if (r.amx_int8_gops > 0) {
    std::printf("int8 tile peak:   %.1f GOP/s (AMX TDPBSSD, the AMX GEMMs' 16 x 32 x 16 tiles)\n",
                r.amx_int8_gops);
  }
  if (!model_path.empty()) {
    auto model = Model::load(model_path, Model::WeightMemory::mmap);  // sizes only
    const double bytes = static_cast<double>(model->weight_bytes_per_token());
    const double params = model->matmul_params();
    std::printf("model weights read per token: %.1f MiB\n", bytes / (1 << 20));
    std::printf("decode upper bound:  %.2f tok/s (read bandwidth / bytes per token)\n",
                r.read_gbps * 1e9 / bytes);
    std::printf("prefill upper bound: %.2f tok/s (AVX2 FMA peak / 2 x %.0fM matmul params)\n",
                r.fma_gflops * 1e9 / (2 * params), params / 1e6);
    if (r.int8_gops > 0) {
      std::printf(
          "prefill upper bound: %.2f tok/s with int8 dot products (the quantized matmuls' "
          "arithmetic)\n",
          r.int8_gops * 1e9 / (2 * params));
    }
    if (r.amx_int8_gops > 0) {
      std::printf("prefill upper bound: %.2f tok/s with AMX int8 tiles\n",
                  r.amx_int8_gops * 1e9 / (2 * params));
    }
  }
}

}  // namespace

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "measure the machine and the engine");
  cmd->require_subcommand(1);

  struct RooflineFlags {
    int threads = 0;
    double gib = 1.0;
    std::string model;
  };
  auto rf = std::make_shared<RooflineFlags>();
  auto* roof = cmd->add_subcommand("roofline", "memory bandwidth and FMA peak of this machine");
  roof->add_option("-t,--threads", rf->threads, "threads (default: physical cores)");
  roof->add_option("--gib", rf->gib, "buffer size per array in GiB")->capture_default_str();
  roof->add_option("-m,--model", rf->model, "also print this model's decode/prefill upper bounds");
  roof->callback([rf] { bench_roofline(rf->threads, rf->gib, rf->model); });

  auto mf = std::make_shared<BenchModelFlags>();
  auto* model = cmd->add_subcommand("model", "prompt processing and generation tokens/s");
  mf->engine.add(*model);
  mf->engine.add_trace(*model);
  model->add_option("-p,--n-prompt", mf->n_prompt, "prompt lengths (0 skips)")->delimiter(',');
  model->add_option("-n,--n-gen", mf->n_gen, "generation lengths (0 skips)")->delimiter(',');
  model->add_option("-d,--depth", mf->depth, "context already filled")->delimiter(',');
  model->add_option("-b,--batch", mf->batch, "parallel sequences (decode batch)")->delimiter(',');
  model->add_option("-r,--repetitions", mf->repetitions, "repetitions")->capture_default_str();
  model->add_option("-o,--output", mf->output, "md or json")->capture_default_str();
  model
      ->add_option("--fill", mf->fill,
                   "how the -d context is filled: model (a real prefill) or synthetic (random K/V, "
                   "no compute)")
      ->capture_default_str();
  model->add_flag(
      "--roofline", mf->roofline,
      "add each test's fraction of the machine's limits (read bandwidth measured before "
      "each test, AVX2 f32 FMA peak), measured in this process");
  model->add_flag("--no-warmup", mf->no_warmup,
                  "time from a cold start: no untimed run of each test's shape first (as "
                  "llama-bench's -w 0)");
  model->callback([mf] { bench_model(*mf); });

  register_bench_offline(*cmd);
#ifdef STRATA_HAS_SERVER
  register_bench_serve(*cmd);
#endif
}

}  // namespace strata::tools
