#include "server/tool_calls.h"

#include <set>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace strata::server {

using nlohmann::json;

namespace {

// A GBNF literal for `text` (JSON text: printable, escapes already JSON's).
std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

bool declared(const ToolSpec& spec, const std::string& name) {
  if (spec.choice == ToolSpec::Choice::kNamed) return name == spec.named;
  for (const json& t : spec.tools) {
    if (t["function"]["name"] == name) return true;
  }
  return false;
}

// {"name": ..., "arguments"|"parameters": {...}} to an OpenAI call, or null.
json to_call(const json& j, const ToolSpec& spec, const std::string& id) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return nullptr;
  const std::string name = j["name"];
  if (!declared(spec, name)) return nullptr;
  json args = j.contains("arguments")    ? j["arguments"]
              : j.contains("parameters") ? j["parameters"]
                                         : json::object();
  if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
  if (!args.is_object()) return nullptr;
  return {
      {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

}  // namespace

std::optional<ToolSpec> parse_tools(const json& body) {
  const JsonFields f(body);
  const json* tools = f.get("tools");
  const json* choice = f.get("tool_choice");
  if (!tools && !choice) return std::nullopt;
  ToolSpec spec;
  if (tools) {
    if (!tools->is_array()) throw invalid_field("tools", "must be a list of tools");
    if (tools->size() > kMaxTools)
      throw invalid_field("tools", "at most " + std::to_string(kMaxTools) + " tools");
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", "") != "function")
        throw invalid_field(where + ".type", "must be \"function\"");
      const auto fn = t.find("function");
      if (fn == t.end() || !fn->is_object())
        throw invalid_field(where + ".function", "is required (an object)");
      const auto name = fn->find("name");
      if (name == fn->end() || !name->is_string() || name->get<std::string>().empty())
        throw invalid_field(where + ".function.name", "is required (a non-empty string)");
      if (!names.insert(name->get<std::string>()).second)
        throw invalid_field(where + ".function.name", "is declared twice");
      const auto params = fn->find("parameters");
      if (params != fn->end() && !params->is_object())
        throw invalid_field(where + ".function.parameters", "must be a JSON schema object");
      spec.tools.push_back(t);
    }
  }
  if (choice) {
    if (choice->is_string()) {
      const std::string c = *choice;
      if (c == "auto") {
        spec.choice = ToolSpec::Choice::kAuto;
      } else if (c == "none") {
        spec.choice = ToolSpec::Choice::kNone;
      } else if (c == "required") {
        spec.choice = ToolSpec::Choice::kRequired;
      } else {
        throw invalid_field("tool_choice", "must be auto, none, required or a named function");
      }
    } else if (choice->is_object()) {
      const auto fn = choice->find("function");
      if (fn == choice->end() || !fn->is_object() || !fn->contains("name") ||
          !(*fn)["name"].is_string())
        throw invalid_field("tool_choice.function.name", "is required");
      spec.choice = ToolSpec::Choice::kNamed;
      spec.named = (*fn)["name"];
    } else {
      throw invalid_field("tool_choice", "must be a string or an object");
    }
    if (spec.constrained() && spec.tools.empty()) throw invalid_field("tool_choice", "needs tools");
    if (spec.choice == ToolSpec::Choice::kNamed) {
      bool known = false;
      for (const json& t : spec.tools) known = known || t["function"]["name"] == spec.named;
      if (!known) {
        throw invalid_field("tool_choice.function.name",
                            "'" + spec.named + "' is not one of the tools");
      }
    }
  }
  return spec;
}

ToolFormat tool_format(std::string_view source) {
  if (source.find("<tool_call>") != std::string_view::npos) return ToolFormat::kHermes;
  if (source.find("[TOOL_CALLS]") != std::string_view::npos) return ToolFormat::kMistral;
  if (source.find("<|python_tag|>") != std::string_view::npos ||
      source.find("\"parameters\": ") != std::string_view::npos)
    return ToolFormat::kLlama3;
  return ToolFormat::kJson;
}

std::string tool_call_gbnf(const ToolSpec& spec, ToolFormat format) {
  const char* args_key = format == ToolFormat::kLlama3 ? "parameters" : "arguments";
  std::string alts, rules;
  for (size_t i = 0; i < spec.tools.size(); ++i) {
    const json& fn = spec.tools[i]["function"];
    const std::string name = fn["name"];
    if (spec.choice == ToolSpec::Choice::kNamed && name != spec.named) continue;
    const std::string rule = "args" + std::to_string(i);
    const json params = fn.contains("parameters") ? fn["parameters"] : json{{"type", "object"}};
    try {
      rules +=
          grammar::schema_to_gbnf(params, "tools[" + std::to_string(i) + "].function.parameters",
                                  {}, {rule, "t" + std::to_string(i) + "-", false});
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "tools");
    }
    if (!alts.empty()) alts += " | ";
    alts += gbnf_literal("{\"name\":" + json(name).dump() + ",\"" + args_key + "\":") + " " + rule +
            " \"}\"";
  }
  std::string root;
  switch (format) {
    case ToolFormat::kHermes:
      root = "\"<tool_call>\\n\" call \"\\n</tool_call>\"";
      break;
    // [TOOL_CALLS] is a control token no grammar can write; the array follows it.
    case ToolFormat::kMistral:
      root = "\"[\" call \"]\"";
      break;
    default:
      root = "call";
      break;
  }
  return "root ::= " + root + "\ncall ::= " + alts + "\n" + rules + grammar::json_primitives_gbnf();
}

ParsedOutput parse_tool_calls(const std::string& text, const ToolSpec& spec,
                              const std::string& id_prefix) {
  ParsedOutput out;
  auto id = [&] { return id_prefix + std::to_string(out.calls.size()); };
  // Hermes tags anywhere in the text.
  size_t pos = 0;
  for (size_t open; (open = text.find("<tool_call>", pos)) != std::string::npos;) {
    const size_t body = open + 11;
    size_t close = text.find("</tool_call>", body);
    const std::string inner =
        text.substr(body, close == std::string::npos ? std::string::npos : close - body);
    const json call = to_call(json::parse(inner, nullptr, false), spec, id());
    if (call.is_null()) break;
    out.content += text.substr(pos, open - pos);
    out.calls.push_back(call);
    pos = close == std::string::npos ? text.size() : close + 12;
  }
  if (!out.calls.empty()) {
    out.content += text.substr(pos);
    return out;
  }
  // The whole text as JSON: one call, or a list of them (Mistral, after [TOOL_CALLS]).
  std::string body = text;
  if (const size_t tag = body.find("[TOOL_CALLS]"); tag != std::string::npos)
    body = body.substr(tag + 12);
  if (body.rfind("<|python_tag|>", 0) == 0) body = body.substr(14);
  const json j = json::parse(body, nullptr, false);
  const json list = j.is_array() ? j : json::array({j});
  for (const json& item : list) {
    const json call = to_call(item, spec, id());
    if (call.is_null()) {
      out.calls = json::array();
      out.content = text;
      return out;
    }
    out.calls.push_back(call);
  }
  if (out.calls.empty()) out.content = text;
  return out;
}

}  // namespace strata::server
