#include "server/request_parse.h"

#include <limits>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace strata::server {
namespace {

using nlohmann::json;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::vector<int32_t> token_array(const json& a, const std::string& field) {
  if (a.empty()) throw invalid_field(field, "a token array must not be empty");
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (const json& t : a) {
    if (!t.is_number_integer() && !t.is_number_unsigned())
      throw invalid_field(field, "token ids must be integers");
    if (t.is_number_unsigned() ? t.get<uint64_t>() > static_cast<uint64_t>(kInt32Max)
                               : (t.get<int64_t>() < 0 || t.get<int64_t>() > kInt32Max)) {
      throw invalid_field(field, "token id " + t.dump() + " is outside the vocabulary");
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

// prompt: a string, a token array, or a non-empty list of either.
std::vector<PromptInput> parse_prompts(const JsonFields& f) {
  const json* p = f.get("prompt");
  if (!p) throw invalid_field("prompt", "is required");
  if (p->is_string()) return {p->get<std::string>()};
  if (!p->is_array())
    throw invalid_field("prompt", "must be a string, a token array, or a list of them");
  if (p->empty()) throw invalid_field("prompt", "must not be empty");
  const json& first = p->front();
  if (first.is_number()) return {token_array(*p, "prompt")};
  std::vector<PromptInput> out;
  for (const json& item : *p) {
    if (item.is_string()) {
      out.emplace_back(item.get<std::string>());
    } else if (item.is_array()) {
      out.emplace_back(token_array(item, "prompt"));
    } else {
      throw invalid_field("prompt", "list items must be strings or token arrays");
    }
  }
  return out;
}

// content: a string, or a list of {"type": "text", "text": ...} parts (joined).
std::string message_content(const json& m, const std::string& where, const std::string& role) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) {
    if (role == "assistant") return {};
    throw invalid_field(where + ".content", "is required");
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array())
    throw invalid_field(where + ".content", "must be a string or a list of text parts");
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& part = (*it)[i];
    const std::string pw = where + ".content[" + std::to_string(i) + "]";
    if (!part.is_object()) throw invalid_field(pw, "must be an object");
    JsonFields pf(part, pw + ".");
    const auto type = pf.string("type");
    if (type != "text") throw invalid_field(pw + ".type", "only \"text\" parts are supported");
    const auto t = pf.string("text");
    if (!t) throw invalid_field(pw + ".text", "is required");
    text += *t;
  }
  return text;
}

// An assistant turn's tool_calls, for the template: arguments (a JSON string in the API)
// become the object templates print with tojson.
json message_tool_calls(const json& calls, const std::string& where) {
  const std::string w = where + ".tool_calls";
  if (!calls.is_array()) throw invalid_field(w, "must be a list");
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    const std::string cw = w + "[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
      throw invalid_field(cw + ".function", "is required (an object)");
    const json& fn = c["function"];
    if (!fn.contains("name") || !fn["name"].is_string())
      throw invalid_field(cw + ".function.name", "is required");
    json args = fn.value("arguments", json("{}"));
    if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
    if (args.is_discarded()) throw invalid_field(cw + ".function.arguments", "is not valid JSON");
    out.push_back({{"id", c.value("id", "")},
                   {"type", "function"},
                   {"function", {{"name", fn["name"]}, {"arguments", std::move(args)}}}});
  }
  return out;
}

json parse_messages(const JsonFields& f) {
  const json* ms = f.get("messages");
  if (!ms) throw invalid_field("messages", "is required");
  if (!ms->is_array()) throw invalid_field("messages", "must be a list of messages");
  if (ms->empty()) throw invalid_field("messages", "must contain at least one message");
  json out = json::array();
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw invalid_field(where, "must be an object");
    JsonFields mf(m, where + ".");
    const auto role = mf.string("role");
    if (!role) throw invalid_field(where + ".role", "is required");
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "developer" &&
        *role != "tool") {
      throw invalid_field(where + ".role", "must be system, developer, user, assistant or tool");
    }
    // The template sees the roles it knows: "developer" is OpenAI's new name for system.
    json msg = {{"role", *role == "developer" ? "system" : *role},
                {"content", message_content(m, where, *role)}};
    if (*role == "tool") {
      const auto id = mf.string("tool_call_id");
      if (!id) throw invalid_field(where + ".tool_call_id", "is required for a tool message");
      msg["tool_call_id"] = *id;
      if (const auto name = mf.string("name")) msg["name"] = *name;
    }
    if (*role == "assistant") {
      if (const json* calls = mf.get("tool_calls"))
        msg["tool_calls"] = message_tool_calls(*calls, where);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<std::string> parse_stop(const JsonFields& f, int32_t max_stop) {
  const json* s = f.get("stop");
  if (!s) return {};
  if (s->is_string()) return {s->get<std::string>()};
  if (!s->is_array()) throw invalid_field("stop", "must be a string or a list of strings");
  if (static_cast<int64_t>(s->size()) > max_stop) {
    throw invalid_field("stop", "at most " + std::to_string(max_stop) + " stop strings");
  }
  std::vector<std::string> out;
  for (const json& item : *s) {
    if (!item.is_string()) throw invalid_field("stop", "must be a string or a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

void parse_sampling(const JsonFields& f, SamplingParams& s) {
  s.temperature = static_cast<float>(f.number("temperature", 0.0, 2.0).value_or(1.0));
  s.top_p = static_cast<float>(f.number("top_p", 0.0, 1.0, /*lo_open=*/true).value_or(1.0));
  // -1 (vLLM's "off") and 0 both disable top-k.
  s.top_k =
      static_cast<int32_t>(std::max<int64_t>(0, f.integer("top_k", -1, kInt32Max).value_or(0)));
  s.min_p = static_cast<float>(f.number("min_p", 0.0, 1.0).value_or(0.0));
  s.presence_penalty = static_cast<float>(f.number("presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty = static_cast<float>(f.number("frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.repetition_penalty =
      static_cast<float>(f.number("repetition_penalty", 0.0, 10.0, true).value_or(1.0));
}

void parse_logprobs(const JsonFields& f, ApiKind kind, const ParseLimits& limits,
                    GenerationRequest& r) {
  if (kind == ApiKind::kCompletion) {
    if (const auto k = f.integer("logprobs", 0, limits.max_logprobs))
      r.options.logprobs = static_cast<int32_t>(*k);
    return;
  }
  const bool want = f.boolean("logprobs").value_or(false);
  const auto top = f.integer("top_logprobs", 0, limits.max_logprobs);
  if (top && !want) throw invalid_field("top_logprobs", "requires logprobs to be true");
  if (want) r.options.logprobs = static_cast<int32_t>(top.value_or(0));
}

}  // namespace

GenerationRequest parse_generation_request(const json& body, ApiKind kind,
                                           const ParseLimits& limits) {
  const JsonFields f(body);
  GenerationRequest r;
  r.kind = kind;
  r.model = f.string("model").value_or("");
  if (kind == ApiKind::kCompletion) {
    r.prompts = parse_prompts(f);
    r.echo = f.boolean("echo").value_or(false);
    r.parse_special = f.boolean("parse_special").value_or(false);
  } else {
    r.messages = parse_messages(f);
    r.tools = parse_tools(body);
  }
  r.n = static_cast<int32_t>(f.integer("n", 1, limits.max_n).value_or(1));
  const size_t n_prompts = kind == ApiKind::kCompletion ? r.prompts.size() : 1;
  if (static_cast<int64_t>(n_prompts) * r.n > limits.max_sequences) {
    throw invalid_field(
        kind == ApiKind::kCompletion ? "prompt" : "n",
        "at most " + std::to_string(limits.max_sequences) + " sequences (prompts x n) per request");
  }
  r.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) throw invalid_field("stream_options", "must be an object");
    if (!r.stream) throw invalid_field("stream_options", "is only allowed when stream is true");
    r.include_usage = JsonFields(*so, "stream_options.").boolean("include_usage").value_or(false);
  }

  StopConditions& stop = r.options.stop;
  // Chat's max_completion_tokens supersedes max_tokens (which it deprecates).
  const char* max_key = kind == ApiKind::kChat && f.get("max_completion_tokens")
                            ? "max_completion_tokens"
                            : "max_tokens";
  const auto max_tokens = f.integer(max_key, 0, limits.context_length);
  r.max_tokens_given = max_tokens.has_value();
  stop.max_tokens = static_cast<int32_t>(
      max_tokens.value_or(kind == ApiKind::kCompletion ? 16 : limits.context_length));
  stop.min_tokens =
      static_cast<int32_t>(f.integer("min_tokens", 0, limits.context_length).value_or(0));
  if (max_tokens && stop.min_tokens > stop.max_tokens)
    throw invalid_field("min_tokens", "must not exceed max_tokens");
  stop.ignore_eos = f.boolean("ignore_eos").value_or(false);
  stop.stop_strings = parse_stop(f, limits.max_stop);

  parse_sampling(f, r.options.sampling);
  r.seed = f.integer_bits("seed");
  parse_logprobs(f, kind, limits, r);
  // echo with logprobs scores the prompt too (lm-evaluation-harness's log-likelihood).
  if (r.echo && r.options.logprobs >= 0) r.options.prompt_logprobs = r.options.logprobs;
  r.options.priority =
      static_cast<int32_t>(f.integer("priority", kInt32Min, kInt32Max).value_or(0));
  r.options.cache_salt = f.string("cache_salt").value_or("");
  r.options.speculative = f.boolean("speculative").value_or(true);
  (void)f.string("user");  // accepted for compatibility; only its type is checked
  return r;
}

}  // namespace strata::server
