#include "server/generation_job.h"

#include <random>

#include "core/clock.h"
#include "core/error.h"
#include "server/api_error.h"

namespace strata::server {
namespace {

using nlohmann::json;

// The engine names the field first ("prompt: 200 tokens leave no room ...").
ApiError engine_error(const Error& e) {
  const std::string msg = e.what();
  const size_t colon = msg.find(':');
  return ApiError(400, msg, colon == std::string::npos ? "" : msg.substr(0, colon));
}

}  // namespace

GenerationJob::GenerationJob(GenerationContext& ctx, GenerationRequest request,
                             std::vector<PreparedPrompt> prompts,
                             std::shared_ptr<Responder> responder, AccessRecord access,
                             double arrival_s)
    : ctx_(ctx),
      request_(std::move(request)),
      prompts_(std::move(prompts)),
      responder_(std::move(responder)),
      access_(std::move(access)),
      arrival_s_(arrival_s) {
  const bool chat = request_.kind == ApiKind::kChat;
  header_.id = random_id(chat ? "chatcmpl-" : "cmpl-");
  header_.object =
      chat ? (request_.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  header_.created = unix_time();
  header_.model = ctx_.model_name;
  access_.id = header_.id;
}

void GenerationJob::start() {
  // Choice c of every prompt samples with seed + c, so a seeded request is reproducible
  // and its n choices differ; unseeded requests draw a random base.
  const uint64_t base =
      request_.seed ? *request_.seed : std::random_device{}() * 0x9E3779B97F4A7C15ull;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    for (int32_t c = 0; c < request_.n; ++c) {
      Sequence s;
      s.prompt = p;
      s.index = static_cast<int32_t>(p) * request_.n + c;
      s.options = request_.options;
      s.options.sampling.seed = base + static_cast<uint64_t>(c);
      s.n_prompt = static_cast<int32_t>(prompts_[p].ids.size());
      // With prompt logprobs the offsets run over the prompt's tokens first.
      if (request_.echo && s.options.prompt_logprobs < 0)
        s.text_offset = static_cast<int64_t>(prompts_[p].text.size());
      seqs_.push_back(std::move(s));
    }
  }
  if (seqs_.empty()) {  // the parser rules this out; a job without sequences would never answer
    throw ApiError(400, "the request has no prompts");
  }
  try {
    for (const Sequence& s : seqs_) ctx_.engine.validate(prompts_[s.prompt].ids, s.options);
  } catch (const Error& e) {
    ctx_.admission.release(static_cast<int64_t>(seqs_.size()));
    throw engine_error(e);
  }
  for (Sequence& s : seqs_) s.processor.emplace(ctx_.tokenizer, s.options.stop.stop_strings);

  for (size_t i = 0; i < seqs_.size(); ++i) {
    Sequence& s = seqs_[i];
    auto callback = [self = shared_from_this(), i](const RequestOutput& o) {
      // Engine thread: copy and hand over; the work happens on the connection's strand.
      const double t = steady_now_s();
      self->responder_->post([self, i, o, t] { self->on_output(i, o, t); });
    };
    try {
      s.id = ctx_.loop.submit(prompts_[s.prompt].ids, s.options, std::move(callback));
    } catch (const Error& e) {
      // Only a shutdown refuses a validated request. Sequences already submitted end
      // through their abort outputs; the rest give their slots back now.
      ctx_.admission.release(static_cast<int64_t>(seqs_.size() - i));
      for (size_t j = 0; j < i; ++j) ctx_.loop.abort(seqs_[j].id);
      seqs_.resize(i);
      completed_ = true;  // the caller answers
      throw ApiError(503, std::string("the server is shutting down: ") + e.what());
    }
  }
  responder_->on_disconnect([self = shared_from_this()] { self->on_disconnect(); });
  if (request_.stream) open_stream();
}

void GenerationJob::open_stream() {
  responder_->start_stream(200, "text/event-stream");
  // Chat streams open each choice with its role; completions with echo, with the prompt.
  for (const Sequence& s : seqs_) {
    if (request_.kind == ApiKind::kChat) {
      write_chunk({{"index", s.index},
                   {"delta", {{"role", "assistant"}, {"content", ""}}},
                   {"logprobs", nullptr},
                   {"finish_reason", nullptr}});
    } else if (request_.echo && s.options.prompt_logprobs < 0) {  // else with its logprobs
      write_chunk({{"index", s.index},
                   {"text", prompts_[s.prompt].text},
                   {"logprobs", nullptr},
                   {"finish_reason", nullptr}});
    }
  }
}

void GenerationJob::on_output(size_t i, const RequestOutput& o, double t) {
  Sequence& s = seqs_[i];
  if (o.finished() && !s.engine_done) {
    s.engine_done = true;
    ctx_.admission.release(1);
    ctx_.metrics.request_queue_time.observe(o.queue_s);
  }
  if (o.finish == FinishReason::kError && error_.empty()) error_ = o.error;
  if (completed_ || s.finish != FinishReason::kNone) return;
  record_timing(s, o, t);
  s.n_cached = o.n_cached_prompt;
  if (s.options.prompt_logprobs >= 0 && s.prompt_logprobs.is_null()) echo_prompt(s, o);
  const auto delta = s.processor->push(o.new_tokens, o.finished());
  FinishReason fr = FinishReason::kNone;
  if (delta.stopped) {
    fr = FinishReason::kStop;
    if (!o.finished()) ctx_.loop.abort(s.id);  // a stop string ended it; free its KV now
  } else if (o.finished()) {
    fr = o.finish;
  }
  emit(s, delta.text, o.logprobs, fr);
  if (fr == FinishReason::kNone) return;
  s.finish = fr;
  ++n_answered_;
  ctx_.metrics.count_finish(fr);
  ctx_.metrics.e2e_request_latency.observe(t - arrival_s_);
  if (n_answered_ == seqs_.size()) complete();
}

void GenerationJob::echo_prompt(Sequence& s, const RequestOutput& o) {
  // The first output carries the prompt's logprobs; a stream sends the echo with them.
  s.prompt_logprobs = prompt_logprobs_json(ctx_.tokenizer, prompts_[s.prompt].ids,
                                           o.prompt_logprobs, s.text_offset);
  if (request_.stream && !client_gone_) {
    write_chunk({{"index", s.index},
                 {"text", prompts_[s.prompt].text},
                 {"logprobs", s.prompt_logprobs},
                 {"finish_reason", nullptr}});
  }
}

void GenerationJob::record_timing(Sequence& s, const RequestOutput& o, double t) {
  if (o.new_tokens.empty()) return;
  if (s.first_token_s < 0) {
    s.first_token_s = t;
    ctx_.metrics.time_to_first_token.observe(t - arrival_s_);
  } else {
    const double per_token = (t - s.last_token_s) / static_cast<double>(o.new_tokens.size());
    for (size_t k = 0; k < o.new_tokens.size(); ++k)
      ctx_.metrics.inter_token_latency.observe(per_token);
  }
  s.last_token_s = t;
  s.n_generated += static_cast<int32_t>(o.new_tokens.size());
}

json GenerationJob::logprobs_json(Sequence& s, std::span<const TokenLogprob> lps) {
  if (request_.options.logprobs < 0) return nullptr;
  return request_.kind == ApiKind::kChat ? chat_logprobs(ctx_.tokenizer, lps)
                                         : completion_logprobs(ctx_.tokenizer, lps, s.text_offset);
}

void GenerationJob::emit(Sequence& s, const std::string& text, std::span<const TokenLogprob> lps,
                         FinishReason fr) {
  if (!request_.stream) {
    s.text += text;
    if (request_.options.logprobs >= 0) s.logprobs.insert(s.logprobs.end(), lps.begin(), lps.end());
    return;
  }
  if (client_gone_) return;
  if (request_.kind == ApiKind::kCompletion) {
    if (text.empty() && lps.empty() && fr == FinishReason::kNone) return;
    write_chunk({{"index", s.index},
                 {"text", text},
                 {"logprobs", logprobs_json(s, lps)},
                 {"finish_reason", finish_json(fr)}});
    return;
  }
  if (tools_active()) {
    // A tool call is known only once its text is complete: held back until the end.
    s.text += text;
    if (fr != FinishReason::kNone) end_tool_stream(s, fr);
    return;
  }
  if (!text.empty() || (!lps.empty() && request_.options.logprobs >= 0)) {
    write_chunk({{"index", s.index},
                 {"delta", {{"content", text}}},
                 {"logprobs", logprobs_json(s, lps)},
                 {"finish_reason", nullptr}});
  }
  if (fr != FinishReason::kNone) {
    write_chunk({{"index", s.index},
                 {"delta", json::object()},
                 {"logprobs", nullptr},
                 {"finish_reason", finish_json(fr)}});
  }
}

bool GenerationJob::tools_active() const {
  return request_.kind == ApiKind::kChat && request_.tools && request_.tools->active();
}

ParsedOutput GenerationJob::parse_calls(const Sequence& s) const {
  return parse_tool_calls(
      s.text, *request_.tools,
      "call_" + header_.id.substr(header_.id.find('-') + 1) + "_" + std::to_string(s.index) + "_");
}

void GenerationJob::end_tool_stream(Sequence& s, FinishReason fr) {
  const ParsedOutput parsed = parse_calls(s);
  if (!parsed.content.empty()) {
    write_chunk({{"index", s.index},
                 {"delta", {{"content", parsed.content}}},
                 {"logprobs", nullptr},
                 {"finish_reason", nullptr}});
  }
  // Each call as OpenAI streams one: its id and name first, then its arguments.
  for (size_t k = 0; k < parsed.calls.size(); ++k) {
    const json& c = parsed.calls[k];
    write_chunk(
        {{"index", s.index},
         {"delta",
          {{"tool_calls",
            json::array({{{"index", k},
                          {"id", c["id"]},
                          {"type", "function"},
                          {"function", {{"name", c["function"]["name"]}, {"arguments", ""}}}}})}}},
         {"logprobs", nullptr},
         {"finish_reason", nullptr}});
    write_chunk({{"index", s.index},
                 {"delta",
                  {{"tool_calls",
                    json::array({{{"index", k},
                                  {"function", {{"arguments", c["function"]["arguments"]}}}}})}}},
                 {"logprobs", nullptr},
                 {"finish_reason", nullptr}});
  }
  write_chunk({{"index", s.index},
               {"delta", json::object()},
               {"logprobs", nullptr},
               {"finish_reason", parsed.calls.empty() ? finish_json(fr) : json("tool_calls")}});
}

void GenerationJob::write_chunk(json choice) {
  json chunk = response_json(header_, json::array({std::move(choice)}));
  if (request_.include_usage) chunk["usage"] = nullptr;
  responder_->write(sse_event(chunk));
}

Usage GenerationJob::usage() const {
  Usage u;
  for (const Sequence& s : seqs_) {
    u.completion_tokens += s.n_generated;
    if (s.index % request_.n == 0) {  // a prompt counts once, however many choices it has
      u.prompt_tokens += s.n_prompt;
      u.cached_tokens += s.n_cached;
    }
  }
  return u;
}

void GenerationJob::complete() {
  completed_ = true;
  const double t = steady_now_s();
  bool aborted = false, failed = false;
  double first_token = -1;
  for (const Sequence& s : seqs_) {
    aborted = aborted || s.finish == FinishReason::kAbort;
    failed = failed || s.finish == FinishReason::kError;
    if (s.first_token_s >= 0 && (first_token < 0 || s.first_token_s < first_token))
      first_token = s.first_token_s;
  }
  const Usage u = usage();
  // A failed sequence fails the request (500, the engine's reason); an aborted one means
  // the server is going away (503).
  const ApiError end_error =
      failed ? ApiError(500, "the engine failed while running this request: " + error_, "",
                        "engine_error")
             : ApiError(503, "the request was aborted: the server is shutting down");
  aborted = aborted || failed;
  access_.status = client_gone_ ? 499 : aborted ? end_error.status() : 200;
  access_.prompt_tokens = u.prompt_tokens;
  access_.completion_tokens = u.completion_tokens;
  access_.ttft_s = first_token >= 0 ? first_token - arrival_s_ : -1;
  access_.total_s = t - arrival_s_;
  if (aborted && !client_gone_) ctx_.metrics.count_error(end_error.status());

  if (request_.stream) {
    if (!client_gone_) {
      if (aborted) responder_->write("data: " + error_body(end_error) + "\n\n");
      if (request_.include_usage) {
        json chunk = response_json(header_, json::array());
        chunk["usage"] = usage_json(u);
        responder_->write(sse_event(chunk));
      }
      responder_->write(kSseDone);
    }
    responder_->finish();
  } else if (aborted || client_gone_) {
    responder_->send({end_error.status(), "application/json", error_body(end_error), {}});
  } else {
    json choices = json::array();
    for (Sequence& s : seqs_) {
      json c = {
          {"index", s.index}, {"logprobs", nullptr}, {"finish_reason", finish_json(s.finish)}};
      if (request_.kind == ApiKind::kChat && tools_active()) {
        const ParsedOutput parsed = parse_calls(s);
        c["message"] = {{"role", "assistant"}, {"content", s.text}};
        if (!parsed.calls.empty()) {
          c["message"]["content"] = parsed.content.empty() ? json(nullptr) : json(parsed.content);
          c["message"]["tool_calls"] = parsed.calls;
          c["finish_reason"] = "tool_calls";
        }
      } else if (request_.kind == ApiKind::kChat) {
        c["message"] = {{"role", "assistant"}, {"content", s.text}};
      } else {
        c["text"] = request_.echo ? prompts_[s.prompt].text + s.text : s.text;
      }
      if (request_.options.logprobs >= 0) {
        c["logprobs"] = logprobs_json(s, s.logprobs);
        if (!s.prompt_logprobs.is_null()) {
          append_completion_logprobs(s.prompt_logprobs, c["logprobs"]);
          c["logprobs"] = std::move(s.prompt_logprobs);
        }
      }
      choices.push_back(std::move(c));
    }
    json body = response_json(header_, std::move(choices));
    body["usage"] = usage_json(u);
    responder_->send({200, "application/json", dump(body), {}});
  }
  log_access(access_);
}

void GenerationJob::on_disconnect() {
  if (completed_) return;
  client_gone_ = true;
  for (const Sequence& s : seqs_) {
    if (!s.engine_done) ctx_.loop.abort(s.id);
  }
}

}  // namespace strata::server
