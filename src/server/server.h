// `strata serve` as a library object: binds the port first (so /health can answer 503
// while the model loads), loads the model and starts the engine thread, and shuts down
// gracefully: stop accepting, let running requests finish for up to the timeout, abort
// the rest, flush their responses, stop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine_core.h"
#include "eval/head_map.h"
#include "model/model.h"
#include "server/api_server.h"
#include "server/http_server.h"

namespace strata::server {

struct ServeOptions {
  std::string model_path;
  strata::Model::LoadOptions load;
  int compute_threads = 1;
  EngineConfig engine;      // eog_tokens are filled in from the model's tokenizer
  HeadMapOptions head_map;  // sparse attention, resolved into engine.head_modes at load
  HttpServerConfig http;
  ApiConfig api;  // an empty served_model_name becomes the model file's stem
  double shutdown_timeout_s = 30;
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

 private:
  struct Model;
  ServeOptions options_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Model> model_;
  bool shut_down_ = false;
};

}  // namespace strata::server
