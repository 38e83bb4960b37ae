// Options shared by the subcommands that load a model and run it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "eval/head_map.h"
#include "kernels/quant/traits.h"
#include "model/model.h"
#include "trace/tracer.h"

namespace strata::tools {

struct EngineFlags {
  std::string model_path;
  int threads = 0;  // 0 = physical cores
  // "auto" by default: bf16 where the CPU has AVX512_BF16 (attention as bf16 dot products,
  // about 1.5x the f16 fold's speed, for a logit drift measured at 1/24-1/40 of Q8_0
  // weights'; docs/BENCHMARKS.md), otherwise f16 as llama.cpp does. Either halves the KV
  // memory and bandwidth of f32, which remains for exact comparisons.
  std::string kv_type = "auto";
  int64_t ctx = 0;  // 0 = model's context length
  int64_t batch = 512;
  std::string trace;       // --trace FILE.json; empty = off
  HeadMapOptions sparse;   // sparse attention (--sparse-heads, --retrieval-ratio, --sink, --window)
  bool mmap = false;       // --mmap: use the weights in place from a file mapping
  bool no_repack = false;  // --no-repack: keep Q4_0/Q8_0/Q6_K weights in the file's layout
  std::string mla_attention = "auto";  // --mla-attention (MLA models)

  // `chunk_flag`: the serving commands take --prefill-chunk from ServingFlags instead.
  void add(CLI::App& cmd, bool chunk_flag = true) {
    cmd.add_option("-m,--model", model_path, "model GGUF file")->required();
    cmd.add_option("-t,--threads", threads, "compute threads (default: physical cores)")
        ->check(CLI::Range(0, 1024));
    cmd.add_option(
           "--kv-type", kv_type,
           "KV cache element type: f32, f16, bf16 (attention computed as bf16 dot products, "
           "AVX512_BF16 where the CPU has it), q8_0 (int8 per 32 elements of head_dim with an f16 "
           "scale; not for MLA models), q4_0 (4 bits per element, groups of 32 with an f16 "
           "scale: 0.56 B/element; not for MLA models), or auto (bf16 with AVX512_BF16, else "
           "f16)")
        ->capture_default_str();
    cmd.add_flag("--mmap", mmap,
                 "map the model file instead of reading it into huge-page memory "
                 "(less resident memory, slower decode)");
    cmd.add_flag(
        "--no-repack", no_repack,
        "keep weights in the file's block layout instead of repacking them (Q4_0, Q8_0, Q*_K, "
        "IQ4_*, Q4_1, Q5_*) for the "
        "AVX2/AVX-512 kernels at load (slower decode and prefill; same results up to float "
        "rounding)");
    cmd.add_option("--mla-attention", mla_attention,
                   "MLA (deepseek2) models: auto (decompressed for a sequence's prefill chunks "
                   "of 64+ tokens, absorbed otherwise), absorbed (queries meet the latent "
                   "cache; the fastest decode), or decompressed (per-head keys and values "
                   "expanded from it every step)")
        ->capture_default_str();
    cmd.add_option("-c,--ctx", ctx, "context length (default: the model's)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
    if (chunk_flag) {
      cmd.add_option("--prefill-chunk", batch, "maximum prompt tokens per forward pass")
          ->capture_default_str()
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    }
    cmd.add_option("--sparse-heads", sparse.map_path,
                   "sparse attention head map JSON (per KV head: full or streaming; or scores)");
    cmd.add_option("--retrieval-ratio", sparse.retrieval_ratio,
                   "fraction of KV heads kept full (by the map's scores; without a map: the first "
                   "heads of each layer)")
        ->check(CLI::Range(0.0, 1.0));
    cmd.add_option("--sink", sparse.sink,
                   "streaming heads: first tokens kept (default: the map's, else 4)")
        ->check(CLI::Range(0, 1 << 20));
    cmd.add_option("--window", sparse.window,
                   "streaming heads: last tokens kept (default: the map's, else 64)")
        ->check(CLI::Range(1, 1 << 24));
  }

  // --trace, for the commands that record one (run, serve, bench model, bench offline).
  void add_trace(CLI::App& cmd) {
    cmd.add_option(
        "--trace", trace,
        "write a Chrome trace-event JSON file of the run (open in Perfetto or chrome://tracing)");
  }

  // The sparse-attention head modes of --sparse-heads & co. for `model` (dense without them).
  HeadModes head_modes(const Model& model) const {
    return resolve_head_modes(sparse, model.config().n_layers, model.config().n_kv_heads);
  }

  // The engine of the one-request commands (run, logits, eval needle, heads score): one
  // sequence, at most --prefill-chunk prompt tokens per step, the context of -c.
  EngineConfig single_request_config(const Model& model) const {
    if (batch <= 0) throw Error("--prefill-chunk: must be positive");
    if (ctx < 0) throw Error("-c/--ctx: must be >= 0");
    EngineConfig c;
    c.context_length = ctx;
    c.kv_type = kv_dtype();
    c.prefix_cache = false;
    c.scheduler.max_seqs = 1;
    c.scheduler.prefill_chunk = batch;
    c.scheduler.max_batch_tokens = batch;
    c.head_modes = head_modes(model);
    return c;
  }

  int thread_count() const { return threads > 0 ? threads : ThreadPool::default_threads(); }

  Model::LoadOptions load_options() const {
    Model::LoadOptions o;
    o.memory = mmap ? Model::WeightMemory::mmap : Model::WeightMemory::huge_pages;
    o.repack_weights = !no_repack;
    o.mla_attention = mla_attention_mode_from_name(mla_attention);
    return o;
  }
  DType kv_dtype() const {
    if (kv_type == "auto") return auto_kv_type();
    const auto t = dtype_from_name(kv_type);
    if (!t || (*t != DType::F32 && *t != DType::F16 && *t != DType::BF16 && *t != DType::Q8_0 &&
               *t != DType::Q4_0)) {
      throw Error("--kv-type: expected f32, f16, bf16, q8_0, q4_0 or auto, got '" + kv_type + "'");
    }
    return *t;
  }
};

// The --trace file of one command: a Tracer when the flag is set (get() is null
// otherwise, which turns tracing off), written by write() once the work is done.
class TraceFile {
 public:
  explicit TraceFile(const std::string& path) : path_(path) {
    if (path_.empty()) return;
    std::FILE* probe = std::fopen(path_.c_str(), "ab");  // fail now, not after the run
    if (!probe) throw Error("--trace: cannot write '" + path_ + "'");
    std::fclose(probe);
    tracer_ = std::make_unique<Tracer>();
  }
  Tracer* get() const { return tracer_.get(); }
  void write() const {
    if (!tracer_) return;
    tracer_->write(path_);
    std::fprintf(stderr, "trace: %zu events written to %s", tracer_->size(), path_.c_str());
    if (tracer_->dropped() > 0) {
      std::fprintf(stderr, " (%llu dropped: buffer full)",
                   static_cast<unsigned long long>(tracer_->dropped()));
    }
    std::fprintf(stderr, "\n");
  }

 private:
  std::string path_;
  std::unique_ptr<Tracer> tracer_;
};

}  // namespace strata::tools
