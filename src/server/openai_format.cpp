#include "server/openai_format.h"

#include <chrono>
#include <random>

namespace strata::server {

using nlohmann::json;

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json finish_json(FinishReason reason) {
  if (reason == FinishReason::kNone) return nullptr;
  return std::string(finish_reason_name(reason));
}

json completion_logprobs(const Tokenizer& tok, std::span<const TokenLogprob> lps,
                         int64_t& text_offset) {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenLogprob& lp : lps) {
    const std::string piece = tok.token_to_piece(lp.token);
    tokens.push_back(piece);
    token_lps.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[tok.token_to_piece(id)] = v;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(piece.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_lps)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

json prompt_logprobs_json(const Tokenizer& tok, std::span<const int32_t> prompt,
                          std::span<const TokenLogprob> lps, int64_t& text_offset) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  if (prompt.empty()) return out;
  const std::string first = tok.token_to_piece(prompt[0]);
  out["tokens"].push_back(first);
  out["token_logprobs"].push_back(nullptr);
  out["top_logprobs"].push_back(nullptr);
  out["text_offset"].push_back(text_offset);
  text_offset += static_cast<int64_t>(first.size());
  append_completion_logprobs(out, completion_logprobs(tok, lps, text_offset));
  return out;
}

void append_completion_logprobs(json& a, const json& b) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const json& v : b.at(key)) a[key].push_back(v);
  }
}

namespace {

json token_entry(const Tokenizer& tok, int32_t id, float logprob) {
  const std::string piece = tok.token_to_piece(id);
  json bytes = json::array();
  for (const unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return {{"token", piece}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

}  // namespace

json chat_logprobs(const Tokenizer& tok, std::span<const TokenLogprob> lps) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) {
    json entry = token_entry(tok, lp.token, lp.logprob);
    json tops = json::array();
    for (const auto& [id, v] : lp.top) tops.push_back(token_entry(tok, id, v));
    entry["top_logprobs"] = std::move(tops);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}};
}

json response_json(const ResponseHeader& h, json choices) {
  return {{"id", h.id},
          {"object", h.object},
          {"created", h.created},
          {"model", h.model},
          {"choices", std::move(choices)}};
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) {
  return "data: " + dump(j) + "\n\n";
}

std::string random_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace strata::server
