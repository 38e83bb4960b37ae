// `strata serve` as a library object: binds the port first (so /health can answer 503
// while the model loads), loads the model and starts the engine thread, and shuts down
// gracefully: stop accepting, let running requests finish for up to the timeout, abort
// the rest, flush their responses, stop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/engine_core.h"
#include "eval/head_map.h"
#include "model/model.h"
#include "server/api_server.h"
#include "server/http_server.h"
#include "server/kv_transfer.h"
#include "server/prompt_builder.h"

namespace strata::server {

struct ServeOptions {
  std::string model_path;
  strata::Model::LoadOptions load;
  int compute_threads = 1;
  EngineConfig engine;           // eog_tokens are filled in from the model's tokenizer
  std::string draft_model_path;  // engine.spec kDraftModel: loaded with `load`
  HeadMapOptions head_map;       // sparse attention, resolved into engine.head_modes at load
  HttpServerConfig http;
  TemplateLimits template_limits;
  ApiConfig api;        // an empty served_model_name becomes the model file's stem
  DisaggConfig disagg;  // prefill/decode disaggregation (--role, --kv-listen, ...)
  double shutdown_timeout_s = 30;
  // Called (on the engine thread) if the engine fails in a way that leaves its state
  // unknown; every request has been answered 500 by then. The owner should shut down.
  std::function<void(const std::string&)> on_engine_failure;
};

class Server {
 public:
  explicit Server(ServeOptions options);  // binds and listens; throws strata::Error
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return http_->port(); }
  void start();     // I/O threads run from here on
  void load();      // model, tokenizer, engine thread; then /health answers 200
  void shutdown();  // graceful; idempotent
  // Gives the allocator's free memory back to the OS (malloc_trim) if the server is idle
  // and has served a request since the last time; true if it did. One burst of large
  // requests would otherwise pin its peak in the heap for good. Call it periodically.
  bool release_memory_if_idle();

 private:
  struct Model;
  ServeOptions options_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Model> model_;
  bool shut_down_ = false;
  uint64_t exchanges_at_release_ = 0;
};

}  // namespace strata::server
