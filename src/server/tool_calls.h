// Tool calls in chat: the request's `tools` and `tool_choice`, the grammar that makes
// "required" or a named function binding, and the parser that turns the model's text
// into OpenAI `tool_calls`. The text format follows the model's chat template family:
//
//   kHermes   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>   (Qwen, Hermes)
//   kLlama3   {"name": ..., "parameters": {...}}                             (Llama 3.x)
//   kMistral  [TOOL_CALLS][{"name": ..., "arguments": {...}}]                 (Mistral)
//   kJson     {"name": ..., "arguments": {...}}                              (anything else)
//
// The parser accepts any of these shapes whatever the family (a model may drift), and
// only calls to a function the request declared; anything else stays content.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace strata::server {

enum class ToolFormat { kHermes, kLlama3, kMistral, kJson };

struct ToolSpec {
  enum class Choice { kAuto, kNone, kRequired, kNamed };
  nlohmann::json tools = nlohmann::json::array();  // validated [{type, function: {...}}]
  Choice choice = Choice::kAuto;
  std::string named;  // kNamed: the function's name

  bool active() const { return choice != Choice::kNone && !tools.empty(); }
  bool constrained() const { return choice == Choice::kRequired || choice == Choice::kNamed; }
};

inline constexpr size_t kMaxTools = 128;

// `tools` and `tool_choice` of a chat body; 400 naming the field when malformed.
std::optional<ToolSpec> parse_tools(const nlohmann::json& body);

// The family from the template's text (the tags it writes).
ToolFormat tool_format(std::string_view template_source);

// GBNF for exactly one call to one of the allowed functions (the named one for kNamed),
// its arguments valid for the function's `parameters` schema.
std::string tool_call_gbnf(const ToolSpec& spec, ToolFormat format);

struct ParsedOutput {
  std::string content;  // the text outside the calls
  nlohmann::json calls =
      nlohmann::json::array();  // [{id, type: function, function: {name, arguments}}]
};

// `id_prefix`: call ids are id_prefix + index ("call_<request>_0").
ParsedOutput parse_tool_calls(const std::string& text, const ToolSpec& spec,
                              const std::string& id_prefix);

}  // namespace strata::server
