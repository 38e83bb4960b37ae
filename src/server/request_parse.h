// Turns the JSON body of /v1/completions and /v1/chat/completions into a validated
// GenerationRequest: every field's type and range is checked here (400 naming the
// field); what needs the tokenizer or the engine (prompt length, token ids) is checked
// when the request is prepared (prompt_builder.h) and submitted.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine_core.h"
#include "server/tool_calls.h"

namespace strata::server {

enum class ApiKind { kCompletion, kChat };

// A completion prompt as sent: text, or token ids.
using PromptInput = std::variant<std::string, std::vector<int32_t>>;

struct ParseLimits {
  int64_t context_length = 0;  // max_tokens and min_tokens may not exceed it
  int32_t max_n = 16;
  int32_t max_sequences = 128;  // prompts x n
  int32_t max_stop = 4;
  int32_t max_logprobs = 20;
};

struct GenerationRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;                 // "" when not given
  std::vector<PromptInput> prompts;  // completions
  nlohmann::json messages;           // chat: validated [{role, content: string, ...}]
  std::optional<ToolSpec> tools;     // chat: tools and tool_choice, when given
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool echo = false;              // completions: the prompt text precedes the output
  bool parse_special = false;     // completions: control-token text in prompts becomes tokens
  bool max_tokens_given = false;  // chat without it generates up to the context
  std::optional<uint64_t> seed;   // choice i samples with seed + i
  RequestOptions options;         // shared by every choice (logprobs >= 0 asks for them)
};

GenerationRequest parse_generation_request(const nlohmann::json& body, ApiKind kind,
                                           const ParseLimits& limits);

}  // namespace strata::server
