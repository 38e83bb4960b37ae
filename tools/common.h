// Options shared by the subcommands that load a model and run it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace strata::tools {

struct EngineFlags {
  std::string model_path;
  int threads = 0;  // 0 = physical cores
  std::string kv_type = "f32";
  int64_t ctx = 0;  // 0 = model's context length
  int64_t batch = 512;

  // `chunk_flag`: the serving commands take --prefill-chunk from ServingFlags instead.
  void add(CLI::App& cmd, bool chunk_flag = true) {
    cmd.add_option("-m,--model", model_path, "model GGUF file")->required();
    cmd.add_option("-t,--threads", threads, "compute threads (default: physical cores)");
    cmd.add_option("--kv-type", kv_type, "KV cache element type: f32 or f16")->capture_default_str();
    cmd.add_option("-c,--ctx", ctx, "context length (default: the model's)");
    if (chunk_flag) {
      cmd.add_option("--prefill-chunk", batch, "maximum prompt tokens per forward pass")
          ->capture_default_str();
    }
  }

  int thread_count() const { return threads > 0 ? threads : ThreadPool::default_threads(); }

  DType kv_dtype() const {
    const auto t = dtype_from_name(kv_type);
    if (!t || (*t != DType::F32 && *t != DType::F16)) {
      throw Error("--kv-type: expected f32 or f16, got '" + kv_type + "'");
    }
    return *t;
  }
};

}  // namespace strata::tools
