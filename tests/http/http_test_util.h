// Shared pieces of the server tests: models, the `strata run` reference, metric polling.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "http/http_client.h"
#include "http/server_process.h"
#include "support/paths.h"
#include "support/process.h"
#include "support/tiny_models.h"

namespace strata::testing {

// Flags every test server gets: one compute thread (the machine is small and shared;
// a spinning pool of two would only slow the engine down).
inline std::vector<std::string> serve_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-t", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A random-weight Llama ("tiny" preset: dim 128, 2 layers, 32000-token vocabulary) with
// a 4096-token context: slow enough per step, and with prompts long enough, that a
// test can act while a request is queued, prefilling or decoding. Built once per build
// tree (written under a temporary name, then renamed, so parallel tests never see half
// a file).
inline const std::string& slow_gguf() {
  static const std::string path = [] {
    const auto dir = std::filesystem::path(STRATA_BUILD_DIR) / "test-scratch";
    std::filesystem::create_directories(dir);
    const auto final_path = dir / "http-random-tiny-4k.gguf";
    if (!std::filesystem::exists(final_path)) {
      const auto tmp = dir / ("http-random-tiny-4k." + std::to_string(::getpid()) + ".tmp");
      const auto r =
          run_command(shell_quote(strata_bin()) + " make-model " + shell_quote(tmp.string()) +
                      " --preset tiny --ctx 4096 --seed 7 --vocab-from " +
                      shell_quote(shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf") + " 2>&1");
      if (r.exit_code != 0) throw std::runtime_error("make-model failed: " + r.out);
      std::filesystem::rename(tmp, final_path);
    }
    return final_path.string();
  }();
  return path;
}

// What `strata run -p PROMPT --temp 0 -n N` prints (the generated text only).
inline std::string strata_run_greedy(const std::string& model, const std::string& prompt, int n) {
  const auto r =
      run_command(shell_quote(strata_bin()) + " run -t 1 -m " + shell_quote(model) + " -p " +
                  shell_quote(prompt) + " --temp 0 -n " + std::to_string(n) + " 2>/dev/null");
  if (r.exit_code != 0) throw std::runtime_error("strata run failed");
  return r.out;
}

inline std::string metrics_text(uint16_t port) {
  return http_get(port, "/metrics").body;
}

// Polls /metrics until `pred` holds or `timeout_s` passes; returns the last text.
inline std::string wait_metrics(uint16_t port, const std::function<bool(const std::string&)>& pred,
                                double timeout_s = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::string text = metrics_text(port);
    if (pred(text) || std::chrono::steady_clock::now() > deadline) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The engine holds nothing: no sequence running or waiting, every KV block free.
inline bool engine_idle(const std::string& m) {
  return metric_value(m, "strata:num_requests_running") == 0 &&
         metric_value(m, "strata:num_requests_waiting") == 0 &&
         metric_value(m, "strata:kv_cache_usage_ratio") == 0;
}

// Concatenated text of a completions stream (choice `index`).
inline std::string stream_text(const StreamResult& s, int index = 0, bool chat = false) {
  std::string text;
  for (const auto& ev : s.events) {
    for (const auto& c : ev["choices"]) {
      if (c["index"] != index) continue;
      if (chat) {
        if (c["delta"].contains("content") && c["delta"]["content"].is_string())
          text += c["delta"]["content"];
      } else {
        text += c["text"].get<std::string>();
      }
    }
  }
  return text;
}

}  // namespace strata::testing
