#include "server/api_server.h"

#include "core/clock.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/openai_format.h"
#include "server/output_constraint.h"

namespace strata::server {

enum class Endpoint {
  kHealth,
  kMetrics,
  kModels,
  kCompletions,
  kChat,
  kTokenize,
  kDetokenize,
  kKvInfo,
  kKvPrefill,
  kKvLookup
};

namespace {

using nlohmann::json;

struct Route {
  const char* path;
  const char* method;
  Endpoint endpoint;
};

const Route kRoutes[] = {
    {"/health", "GET", Endpoint::kHealth},
    {"/metrics", "GET", Endpoint::kMetrics},
    {"/v1/models", "GET", Endpoint::kModels},
    {"/v1/completions", "POST", Endpoint::kCompletions},
    {"/v1/chat/completions", "POST", Endpoint::kChat},
    {"/tokenize", "POST", Endpoint::kTokenize},
    {"/detokenize", "POST", Endpoint::kDetokenize},
    {"/internal/kv/info", "GET", Endpoint::kKvInfo},
    {"/internal/kv/prefill", "POST", Endpoint::kKvPrefill},
    {"/internal/kv/lookup", "POST", Endpoint::kKvLookup},
};

const Route* find_route(std::string_view path) {
  for (const auto& r : kRoutes) {
    if (path == r.path) return &r;
  }
  return nullptr;
}

// Compares in time independent of where equal-length strings differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

ApiServer::ApiServer(ApiConfig config) : config_(std::move(config)), prepare_(config_.prepare) {}

void ApiServer::attach(const EngineCore& engine, EngineLoop& loop, const PromptBuilder& prompts,
                       int64_t max_running) {
  limits_.context_length = engine.context_length();
  admission_.emplace(max_running + config_.max_queued_requests);
  context_.emplace(GenerationContext{loop, engine, prompts.tokenizer(), metrics_, *admission_,
                                     config_.served_model_name});
  prompts_ = &prompts;
  grammars_.emplace(grammar_vocab(prompts.tokenizer()));
  loop_ = &loop;
  created_ = unix_time();
  ready_.store(true);
}

void ApiServer::handle(HttpRequest req, std::shared_ptr<Responder> responder) {
  AccessRecord access;
  access.id = "-";
  access.method = req.method;
  access.path = req.path();
  access.remote = req.remote;
  try {
    if (req.rejected == 413) {
      throw ApiError(413, "the request body is larger than " +
                              std::to_string(config_.max_body_bytes) + " bytes");
    }
    if (req.rejected) throw ApiError(req.rejected, "malformed HTTP request");
    const Route* route = find_route(access.path);
    // With a key set, only /health answers without it: a caller without the key learns
    // nothing, not even which routes exist.
    if (!route || route->endpoint != Endpoint::kHealth) check_auth(req);
    if (!route) throw ApiError(404, "no route " + access.path);
    if (req.method != route->method) {
      ApiError e(405, "method " + req.method + " is not allowed on " + access.path + "; use " +
                          route->method);
      metrics_.count_error(405);
      HttpResponse r{405, "application/json", error_body(e), {{"Allow", route->method}}};
      return reply(responder, access, std::move(r), req.received_s);
    }
    switch (route->endpoint) {
      case Endpoint::kCompletions:
      case Endpoint::kChat:
      case Endpoint::kTokenize:
      case Endpoint::kDetokenize:
      case Endpoint::kKvPrefill:
      case Endpoint::kKvLookup:
        return post_prepared(route->endpoint, std::move(req), responder, std::move(access));
      default:
        return dispatch(route->endpoint, req, responder, access);
    }
  } catch (const ApiError& e) {
    fail(responder, access, e, req.received_s);
  } catch (const std::exception& e) {
    fail_internal(responder, access, e, req.received_s);
  }
}

void ApiServer::post_prepared(Endpoint endpoint, HttpRequest req,
                              std::shared_ptr<Responder> responder, AccessRecord access) {
  if (!ready_.load()) throw ApiError(503, "the model is still loading");
  // Shared: the task must be copyable (std::function), the body must not be copied.
  auto request = std::make_shared<const HttpRequest>(std::move(req));
  const bool posted =
      prepare_.try_post([this, endpoint, request, responder, access](bool expired) mutable {
        try {
          if (expired) {
            throw ApiError(503, shutting_down_.load()
                                    ? "the server is shutting down"
                                    : "the request waited too long to be prepared; retry later");
          }
          dispatch(endpoint, *request, responder, access);
        } catch (const ApiError& e) {
          fail(responder, access, e, request->received_s);
        } catch (const std::exception& e) {
          fail_internal(responder, access, e, request->received_s);
        }
      });
  if (!posted) {
    throw ApiError(429, "too many requests are waiting to be prepared (" +
                            std::to_string(prepare_.config().max_queued) + "); retry later");
  }
}

void ApiServer::fail(const std::shared_ptr<Responder>& responder, AccessRecord& access,
                     const ApiError& e, double arrival_s) {
  metrics_.count_error(e.status());
  reply(responder, access, {e.status(), "application/json", error_body(e), {}}, arrival_s);
}

void ApiServer::fail_internal(const std::shared_ptr<Responder>& responder, AccessRecord& access,
                              const std::exception& e, double arrival_s) {
  fail(responder, access, ApiError(500, std::string("internal error: ") + e.what()), arrival_s);
}

void ApiServer::dispatch(Endpoint endpoint, const HttpRequest& req,
                         const std::shared_ptr<Responder>& responder, AccessRecord& access) {
  const double t0 = req.received_s;
  switch (endpoint) {
    case Endpoint::kHealth: {
      const bool ok = ready_.load() && !shutting_down_.load();
      return reply(responder, access, {ok ? 200 : 503, "application/json", health(), {}}, t0);
    }
    case Endpoint::kMetrics: {
      const EngineMetrics m = ready_.load() ? loop_->metrics() : EngineMetrics{};
      if (kv_) metrics_.set_kv_import_rejections(kv_->import_rejections());
      return reply(responder, access,
                   {200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render(m), {}}, t0);
    }
    case Endpoint::kModels:
      return reply(responder, access, {200, "application/json", models(), {}}, t0);
    default:
      break;
  }
  if (!ready_.load()) throw ApiError(503, "the model is still loading");
  switch (endpoint) {
    case Endpoint::kCompletions:
      return generate(ApiKind::kCompletion, req, responder, access);
    case Endpoint::kChat:
      return generate(ApiKind::kChat, req, responder, access);
    case Endpoint::kTokenize:
      return reply(responder, access, {200, "application/json", tokenize(req), {}}, t0);
    case Endpoint::kDetokenize:
      return reply(responder, access, {200, "application/json", detokenize(req), {}}, t0);
    case Endpoint::kKvInfo:
      if (!kv_) throw ApiError(404, "this server does not take part in disaggregation");
      return reply(responder, access, {200, "application/json", dump(kv_->info()), {}}, t0);
    case Endpoint::kKvPrefill:
      return kv_prefill(req, responder, access);
    case Endpoint::kKvLookup:
      return kv_lookup(req, responder, access);
    default:
      throw ApiError(404, "no route " + access.path);
  }
}

void ApiServer::check_auth(const HttpRequest& req) const {
  if (config_.api_key.empty()) return;
  const std::string_view auth = req.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() < kBearer.size() || auth.substr(0, kBearer.size()) != kBearer) {
    throw ApiError(401, "missing API key: send 'Authorization: Bearer <key>'");
  }
  if (!constant_time_equal(auth.substr(kBearer.size()), config_.api_key))
    throw ApiError(401, "invalid API key");
}

void ApiServer::check_model(const json& body) const {
  const auto model = JsonFields(body).string("model");
  if (model && !model->empty() && *model != config_.served_model_name) {
    throw ApiError(404,
                   "the model '" + *model + "' does not exist; this server serves '" +
                       config_.served_model_name + "'",
                   "model", "model_not_found");
  }
}

void ApiServer::generate(ApiKind kind, const HttpRequest& req,
                         const std::shared_ptr<Responder>& responder, AccessRecord access) {
  const json body = parse_json_object(req.body);
  GenerationRequest gr = parse_generation_request(body, kind, limits_);
  check_model(body);
  // Compiled here, on the prepare pool, within the grammar's limits.
  if (const auto source = parse_output_constraint(body))
    gr.options.grammar = grammars_->get(*source);
  const bool tools = gr.tools && gr.tools->active();
  if (tools && gr.tools->constrained()) {
    // "required" or a named function: the output is one call, its arguments valid.
    if (gr.options.grammar)
      throw invalid_field("tool_choice", "cannot be combined with response_format or grammar");
    const GrammarSource calls{tool_call_gbnf(*gr.tools, tool_format(prompts_->template_source())),
                              "tools"};
    gr.options.grammar = grammars_->get(calls);
  }
  if (shutting_down_.load()) throw ApiError(503, "the server is shutting down");
  std::vector<PreparedPrompt> prompts;
  try {
    prompts = kind == ApiKind::kChat
                  ? std::vector<PreparedPrompt>{prompts_->chat_prompt(
                        gr.messages, true, tools ? gr.tools->tools : json(nullptr))}
                  : prompts_->completion_prompts(gr.prompts, gr.parse_special);
  } catch (const Error& e) {
    throw ApiError(400, std::string("prompt: ") + e.what(), "prompt");
  }
  const auto n_sequences = static_cast<int64_t>(prompts.size()) * gr.n;
  if (!admission_->try_acquire(n_sequences)) {
    throw ApiError(429, "too many requests waiting (" +
                            std::to_string(config_.max_queued_requests) +
                            " sequences may queue); retry later");
  }
  AccessRecord error_access = access;
  auto job = std::make_shared<GenerationJob>(*context_, std::move(gr), std::move(prompts),
                                             responder, std::move(access), req.received_s);
  // Started on the connection's strand, where the job's outputs will run: none of them
  // can then run before start() has recorded the sequence ids.
  responder->post([this, job, responder, error_access, arrival = req.received_s]() mutable {
    try {
      job->start();  // on failure it has released the slots
    } catch (const ApiError& e) {
      fail(responder, error_access, e, arrival);
    } catch (const std::exception& e) {
      fail_internal(responder, error_access, e, arrival);
    }
  });
}

// The prompt of an /internal/kv/* body (an OpenAI completion or chat request), rendered,
// tokenized and validated exactly as generate() does; its cache salt in `salt`.
std::vector<int32_t> ApiServer::internal_prompt(const json& body, std::string& salt) const {
  const ApiKind kind = JsonFields(body).get("messages") ? ApiKind::kChat : ApiKind::kCompletion;
  GenerationRequest gr = parse_generation_request(body, kind, limits_);
  check_model(body);
  const bool tools = gr.tools && gr.tools->active();
  std::vector<PreparedPrompt> prompts;
  try {
    prompts = kind == ApiKind::kChat
                  ? std::vector<PreparedPrompt>{prompts_->chat_prompt(
                        gr.messages, true, tools ? gr.tools->tools : json(nullptr))}
                  : prompts_->completion_prompts(gr.prompts, gr.parse_special);
  } catch (const Error& e) {
    throw ApiError(400, std::string("prompt: ") + e.what(), "prompt");
  }
  if (prompts.size() != 1) throw invalid_field("prompt", "must be one prompt for /internal/kv");
  try {  // refused here as the decode replica would refuse it
    context_->engine.validate(prompts[0].ids, gr.options);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "prompt");
  }
  salt = gr.options.cache_salt;
  return std::move(prompts[0].ids);
}

// POST /internal/kv/prefill: the request body plus "kv_target" (HOST:PORT of the decode
// replica's KV receiver) and optionally "route": {"decode_held_blocks": n} (what the
// decode replica's /internal/kv/lookup said), handed to the KvTransferService.
void ApiServer::kv_prefill(const HttpRequest& req, const std::shared_ptr<Responder>& responder,
                           AccessRecord access) {
  if (!kv_ || !kv_->serves_prefill())
    throw ApiError(404, "this server does not serve /internal/kv/prefill (see --role)");
  const json body = parse_json_object(req.body);
  const JsonFields f(body);
  const auto target = f.string("kv_target");
  if (!target || target->empty())
    throw invalid_field("kv_target", "is required: the decode replica's KV receiver HOST:PORT");
  try {
    split_host_port(*target, "kv_target");
  } catch (const Error& e) {
    throw invalid_field("kv_target", e.what());
  }
  int64_t held = 0;
  if (const json* route = f.get("route"); route && route->is_object()) {
    const auto it = route->find("decode_held_blocks");
    if (it != route->end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0)
        throw invalid_field("route", "decode_held_blocks must be an integer >= 0");
      held = it->get<int64_t>();
    }
  }
  std::string salt;
  std::vector<int32_t> prompt = internal_prompt(body, salt);
  const double t0 = req.received_s;
  auto shared_access = std::make_shared<AccessRecord>(std::move(access));
  kv_->prefill(
      std::move(prompt), std::move(salt), *target, held,
      [this, responder, shared_access, t0](int status, json answer) {
        reply(responder, *shared_access, {status, "application/json", dump(answer), {}}, t0);
      });
}

// POST /internal/kv/lookup: how many leading full blocks of the request's prompt this
// replica's prefix cache holds (asked on the engine thread, waited for at most 2 s).
void ApiServer::kv_lookup(const HttpRequest& req, const std::shared_ptr<Responder>& responder,
                          AccessRecord& access) {
  if (!kv_) throw ApiError(404, "this server does not take part in disaggregation");
  std::string salt;
  std::vector<int32_t> prompt = internal_prompt(parse_json_object(req.body), salt);
  const auto n = prompt.size();
  const auto held = kv_->held_blocks(std::move(prompt), std::move(salt), 2.0);
  if (!held) throw ApiError(503, "the engine thread did not answer the lookup in time");
  reply(
      responder, access,
      {200,
       "application/json",
       dump(json{{"held_blocks", *held}, {"prompt_tokens", n}, {"block_size", kv_->block_size()}}),
       {}},
      req.received_s);
}

std::string ApiServer::health() const {
  const char* status = shutting_down_.load() ? "shutting_down" : ready_.load() ? "ok" : "loading";
  return dump(json{{"status", status}});
}

std::string ApiServer::models() const {
  json model = {{"id", config_.served_model_name},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "strata"}};
  if (ready_.load()) model["max_model_len"] = limits_.context_length;
  return dump(json{{"object", "list"}, {"data", json::array({std::move(model)})}});
}

std::string ApiServer::tokenize(const HttpRequest& req) const {
  const json body = parse_json_object(req.body);
  check_model(body);
  const JsonFields f(body);
  std::vector<int32_t> ids;
  if (f.get("messages")) {
    GenerationRequest gr = parse_generation_request(body, ApiKind::kChat, limits_);
    const bool add_gen = f.boolean("add_generation_prompt").value_or(true);
    ids = prompts_->chat_prompt(gr.messages, add_gen).ids;
  } else {
    const auto prompt = f.string("prompt");
    if (!prompt) throw invalid_field("prompt", "is required (a string), or give messages");
    try {
      ids = prompts_->tokenize(*prompt, f.boolean("add_special_tokens").value_or(true),
                               f.boolean("parse_special").value_or(false));
    } catch (const Error& e) {
      throw ApiError(400, std::string("prompt: ") + e.what(), "prompt");
    }
  }
  return dump(
      json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", limits_.context_length}});
}

std::string ApiServer::detokenize(const HttpRequest& req) const {
  const json body = parse_json_object(req.body);
  check_model(body);
  const json* tokens = JsonFields(body).get("tokens");
  if (!tokens || !tokens->is_array()) throw invalid_field("tokens", "must be a list of token ids");
  const int32_t n_vocab = prompts_->tokenizer().n_vocab();
  std::vector<int32_t> ids;
  for (const json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab) {
      throw invalid_field("tokens",
                          "token ids must be integers in [0, " + std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return dump(json{{"prompt", prompts_->tokenizer().decode(ids)}});
}

void ApiServer::reply(const std::shared_ptr<Responder>& responder, AccessRecord& access,
                      HttpResponse response, double arrival_s) {
  access.status = response.status;
  access.total_s = steady_now_s() - arrival_s;
  responder->send(std::move(response));
  log_access(access);
}

}  // namespace strata::server
