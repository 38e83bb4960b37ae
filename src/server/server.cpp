#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "engine/engine_loop.h"
#include "engine/output_processor.h"
#include "model/model.h"
#include "server/prompt_builder.h"

namespace strata::server {

struct Server::Model {
  std::unique_ptr<strata::Model> model;
  std::unique_ptr<strata::Model> draft;  // speculative decoding's draft model, if any
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<EngineCore> engine;
  std::unique_ptr<PromptBuilder> prompts;
  std::unique_ptr<KvTransferService> kv;  // its receiver stops before the loop goes
  std::unique_ptr<EngineLoop> loop;       // declared last: its thread stops before the engine goes
};

Server::Server(ServeOptions options) : options_(std::move(options)) {
  if (options_.api.served_model_name.empty()) {
    options_.api.served_model_name = std::filesystem::path(options_.model_path).stem().string();
  }
  options_.api.max_body_bytes = options_.http.max_body_bytes;
  api_ = std::make_unique<ApiServer>(options_.api);
  http_ = std::make_unique<HttpServer>(
      options_.http, [api = api_.get()](HttpRequest req, std::shared_ptr<Responder> r) {
        api->handle(std::move(req), std::move(r));
      });
}

Server::~Server() {
  shutdown();
}

void Server::start() {
  http_->start();
}

void Server::load() {
  auto m = std::make_unique<Model>();
  m->model = strata::Model::load(options_.model_path, options_.load);
  const Tokenizer tok = Tokenizer::from_gguf(m->model->file());
  const std::string tmpl = m->model->file().get_string("tokenizer.chat_template", "");
  m->prompts = std::make_unique<PromptBuilder>(tok, tmpl, options_.template_limits);
  EngineConfig config = options_.engine;
  config.eog_tokens = eog_tokens(tok);
  const int64_t trained_ctx = m->model->config().context_length;
  if (config.context_length > trained_ctx) {
    std::fprintf(stderr,
                 "strata serve: warning: context %lld exceeds the model's trained context %lld; "
                 "positions past it may lose quality\n",
                 static_cast<long long>(config.context_length),
                 static_cast<long long>(trained_ctx));
  }
  if (options_.head_map.enabled()) {
    config.head_modes = resolve_head_modes(options_.head_map, m->model->config().n_layers,
                                           m->model->config().n_kv_heads);
  }
  if (!options_.draft_model_path.empty()) {
    m->draft = strata::Model::load(options_.draft_model_path, options_.load);
    config.draft_model = m->draft.get();
  }
  m->pool = std::make_unique<ThreadPool>(options_.compute_threads);
  m->engine = std::make_unique<EngineCore>(*m->model, *m->pool, config);
  m->loop = std::make_unique<EngineLoop>(*m->engine, options_.on_engine_failure);
  m->kv =
      std::make_unique<KvTransferService>(options_.disagg, *m->loop, *m->engine, api_->metrics());
  model_ = std::move(m);
  api_->attach(*model_->engine, *model_->loop, *model_->prompts, config.scheduler.max_seqs);
  api_->attach_kv(model_->kv.get());
}

bool Server::release_memory_if_idle() {
  const uint64_t exchanges = http_->exchanges();
  if (exchanges == exchanges_at_release_ || http_->busy() > 0) return false;
  if (model_ && model_->loop->in_flight() > 0) return false;
  exchanges_at_release_ = exchanges;
#ifdef __GLIBC__
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

void Server::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  using clock = std::chrono::steady_clock;
  api_->begin_shutdown();
  http_->stop_accepting();
  // Requests being prepared either reach the engine or are refused (503) now; each
  // preparation is bounded by the template deadline and the body size.
  const auto start = clock::now();
  api_->wait_prepared(options_.shutdown_timeout_s);
  const double left =
      std::max(0.0, options_.shutdown_timeout_s -
                        std::chrono::duration<double>(clock::now() - start).count());
  if (model_) {
    if (!model_->loop->wait_idle(left)) {
      std::fprintf(stderr, "strata serve: %zu requests still running after %.1f s; aborting them\n",
                   model_->loop->in_flight(), options_.shutdown_timeout_s);
      model_->loop->abort_all();
      model_->loop->wait_idle(10.0);
    }
  }
  api_->stop_preparing();
  // Let the last responses reach their clients.
  const auto deadline = clock::now() + std::chrono::seconds(5);
  while (http_->busy() > 0 && clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // I/O threads first: then no queued output handler can touch the engine loop while
  // it goes. Callbacks the loop still makes post to the stopped pool and are dropped.
  http_->stop();
  if (model_) model_->kv->stop_receiver();
  model_.reset();
}

}  // namespace strata::server
