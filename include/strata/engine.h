// strata's public API: load a GGUF model, create an engine over it, submit and abort
// requests, step it, read outputs and metrics. This header and strata/types.h include
// nothing of the engine's internals; link the `strata_api` library.
//
//   auto engine = strata::Engine::create({.model_path = "model.gguf"});
//   strata::RequestOptions o;
//   o.stop.max_tokens = 32;
//   const auto id = engine->add_request(engine->tokenize("Once upon a time"), o);
//   std::vector<int32_t> out;
//   while (engine->has_work()) {
//     for (const strata::RequestOutput& r : engine->step()) out.insert(out.end(),
//     r.new_tokens.begin(), r.new_tokens.end());
//   }
//   std::string text = engine->detokenize(out);
//
// One thread steps an Engine. Errors (a bad file, a bad request) are thrown as
// std::runtime_error with a message that names the offending field.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/types.h"

namespace strata {

enum class KvCacheType { kAuto, kF32, kF16, kBF16 };  // kAuto: bf16 with AVX512_BF16, else f16

struct EngineOptions {
  std::string model_path;
  int threads = 0;              // compute threads; 0 = the physical cores
  int64_t context_length = 0;   // per-request context; 0 (or more than the model's) = the model's
  int64_t kv_cache_tokens = 0;  // KV pool; 0 = a full context per sequence slot, within 2 GiB
  KvCacheType kv_type = KvCacheType::kAuto;
  bool prefix_cache = true;
  int32_t max_seqs = 64;            // running sequences at most
  int64_t max_batch_tokens = 2048;  // tokens per step at most
  int64_t prefill_chunk = 512;      // prompt tokens per request per step (0 = no chunking)
  bool mmap = false;                // use the weights in place from a file mapping
};

class Engine {
 public:
  static std::unique_ptr<Engine> create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Text to token ids with the model's tokenizer (BOS as the model asks), and back.
  std::vector<int32_t> tokenize(std::string_view text) const;
  std::string detokenize(std::span<const int32_t> tokens) const;

  // Validates (throws naming the bad field) and queues a request.
  RequestId add_request(std::vector<int32_t> prompt, const RequestOptions& options);
  // One scheduling step and one forward pass: the outputs of every request that produced
  // a token, finished or was aborted. Valid until the next call.
  std::span<const RequestOutput> step();
  // Ends a request; its final output (FinishReason::kAbort) comes with the next step.
  bool abort(RequestId id);
  bool has_work() const;

  EngineMetrics metrics() const;
  int64_t context_length() const;  // the per-request limit in tokens
  int64_t n_vocab() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
