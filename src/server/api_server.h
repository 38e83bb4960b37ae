// The OpenAI-compatible routes: authentication, routing (404/405), the generation
// endpoints, models, health, metrics, tokenize and detokenize. Every error leaves as an
// OpenAI-shaped JSON body; every request is counted and logged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_loop.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/grammar_cache.h"
#include "server/http_types.h"
#include "server/kv_transfer.h"
#include "server/metrics.h"
#include "server/prepare_pool.h"
#include "server/prompt_builder.h"
#include "server/request_parse.h"

namespace strata::server {

enum class Endpoint;  // api_server.cpp

struct ApiConfig {
  std::string api_key;            // empty: no authentication
  std::string served_model_name;  // the only `model` requests may name
  int64_t max_queued_requests = 256;
  uint64_t max_body_bytes = 8 << 20;  // for the 413 message
  PreparePoolConfig prepare;          // parsing, templating, tokenizing off the I/O threads
};

class ApiServer {
 public:
  explicit ApiServer(ApiConfig config);

  // The model is loaded: the routes that need it go live and /health turns 200. The
  // arguments must outlive every request (the server shuts down before freeing them).
  void attach(const EngineCore& engine, EngineLoop& loop, const PromptBuilder& prompts,
              int64_t max_running);
  // Prefill/decode disaggregation's routes (/internal/kv/*); null: they answer 404.
  void attach_kv(KvTransferService* kv) { kv_ = kv; }
  // Generation requests are refused (503) from now on; /health reports 503.
  void begin_shutdown() { shutting_down_.store(true); }
  // Waits up to `timeout_s` for the requests being prepared; true if none is left.
  bool wait_prepared(double timeout_s) { return prepare_.wait_idle(timeout_s); }
  // Answers what is still queued for preparation (503) and joins the preparation
  // threads: before the model the routes use goes away.
  void stop_preparing() { prepare_.stop(); }

  void handle(HttpRequest req, std::shared_ptr<Responder> responder);

  ServerMetrics& metrics() { return metrics_; }

 private:
  void dispatch(Endpoint endpoint, const HttpRequest& req,
                const std::shared_ptr<Responder>& responder, AccessRecord& access);
  // The routes whose work is CPU-heavy go through the preparation pool.
  void post_prepared(Endpoint endpoint, HttpRequest req, std::shared_ptr<Responder> responder,
                     AccessRecord access);
  void fail(const std::shared_ptr<Responder>& responder, AccessRecord& access, const ApiError& e,
            double arrival_s);
  void fail_internal(const std::shared_ptr<Responder>& responder, AccessRecord& access,
                     const std::exception& e, double arrival_s);
  void check_auth(const HttpRequest& req) const;
  void check_model(const nlohmann::json& body) const;
  void generate(ApiKind kind, const HttpRequest& req, const std::shared_ptr<Responder>& responder,
                AccessRecord access);
  std::vector<int32_t> internal_prompt(const nlohmann::json& body, std::string& salt) const;
  void kv_prefill(const HttpRequest& req, const std::shared_ptr<Responder>& responder,
                  AccessRecord access);
  void kv_lookup(const HttpRequest& req, const std::shared_ptr<Responder>& responder,
                 AccessRecord& access);
  std::string health() const;
  std::string models() const;
  std::string tokenize(const HttpRequest& req) const;
  std::string detokenize(const HttpRequest& req) const;
  void reply(const std::shared_ptr<Responder>& responder, AccessRecord& access,
             HttpResponse response, double arrival_s);

  ApiConfig config_;
  ServerMetrics metrics_;
  ParseLimits limits_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> shutting_down_{false};
  std::optional<Admission> admission_;
  std::optional<GenerationContext> context_;
  const PromptBuilder* prompts_ = nullptr;
  std::optional<GrammarCache> grammars_;  // constrained output's compiled grammars
  EngineLoop* loop_ = nullptr;
  KvTransferService* kv_ = nullptr;
  int64_t created_ = 0;
  PreparePool prepare_;  // last: its threads stop before the members they use go
};

}  // namespace strata::server
