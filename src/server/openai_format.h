// OpenAI response shapes: usage, logprobs (completions and chat), chunks and bodies,
// and server-sent-event framing. Only formatting: no state, no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/engine_core.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

// The fields every response and chunk carries.
struct ResponseHeader {
  std::string id;      // "cmpl-..." or "chatcmpl-..."
  std::string object;  // "text_completion", "chat.completion", "chat.completion.chunk"
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

nlohmann::json usage_json(const Usage& u);

// "stop", "length", "abort"; null while the choice runs.
nlohmann::json finish_json(FinishReason reason);

// Completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}; the
// offsets start at `text_offset`, which is advanced past the tokens.
nlohmann::json completion_logprobs(const Tokenizer& tok, std::span<const TokenLogprob> lps,
                                   int64_t& text_offset);
// The same for an echoed prompt: one entry per prompt token, the first with null logprobs
// (nothing predicts it), `lps` scoring tokens 1.. (RequestOutput::prompt_logprobs). The
// offsets start at 0 and end at `text_offset`.
nlohmann::json prompt_logprobs_json(const Tokenizer& tok, std::span<const int32_t> prompt,
                                    std::span<const TokenLogprob> lps, int64_t& text_offset);
// Appends completions logprobs `b` to `a` (prompt then generated tokens).
void append_completion_logprobs(nlohmann::json& a, const nlohmann::json& b);
// Chat logprobs: {content: [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json chat_logprobs(const Tokenizer& tok, std::span<const TokenLogprob> lps);

nlohmann::json response_json(const ResponseHeader& h, nlohmann::json choices);

// JSON text that never throws on invalid UTF-8 (the model may emit partial characters
// in token pieces): bad bytes become U+FFFD.
std::string dump(const nlohmann::json& j);
// One server-sent event: "data: <json>\n\n".
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// A random hex id with `prefix`, for responses ("cmpl-3f2a...").
std::string random_id(const std::string& prefix);
int64_t unix_time();

}  // namespace strata::server
