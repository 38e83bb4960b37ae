#include "grammar/json_schema.h"

#include <set>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace strata::grammar {
namespace {

using nlohmann::json;

// The pieces of compact JSON every schema grammar may use. Numbers and integers are of
// bounded length so that a sampled one always ends, and within a double's range (at most
// 16 digits and an exponent of two: strict parsers reject 1e400).
constexpr const char* kPrimitives =
    R"(char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" (string ":" value ("," string ":" value)*)? "}"
array ::= "[" (value ("," value)*)? "]"
)";

const std::set<std::string> kKeywords = {
    "type",     "properties",  "required",  "additionalProperties",
    "enum",     "const",       "items",     "minItems",
    "maxItems", "minLength",   "maxLength", "anyOf",
    "oneOf",    "$ref",        "$defs",     "definitions",
    "title",    "description", "default",   "examples",
    "$schema",  "$id",         "$comment",  "strict"};

// A GBNF string literal matching exactly `text`.
std::string literal(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, std::string where, const SchemaLimits& limits,
                 SchemaRuleNames names)
      : root_(root), where_(std::move(where)), limits_(limits), names_(std::move(names)) {}

  std::string compile() {
    const std::string body = visit(root_, where_, 0);
    add_rule(names_.root, body);
    std::string out;
    for (const std::string& r : rules_) out += r;
    return names_.primitives ? out + kPrimitives : out;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(path + ": " + what);
  }

  std::string new_name() { return names_.prefix + std::to_string(++n_rules_); }

  void add_rule(const std::string& name, const std::string& body) {
    rules_.push_back(name + " ::= " + body + "\n");
    bytes_ += rules_.back().size();
    if (bytes_ + 1024 > limits_.max_grammar_bytes) {
      fail(where_, "the schema's grammar would exceed " +
                       std::to_string(limits_.max_grammar_bytes) + " bytes");
    }
  }

  // A rule for `body`, so that large expressions are referred to by name.
  std::string named(const std::string& body) {
    const std::string name = new_name();
    add_rule(name, body);
    return name;
  }

  int64_t bound(const json& s, const char* key, const std::string& path, int64_t dflt) const {
    const auto it = s.find(key);
    if (it == s.end()) return dflt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      fail(path + "." + key, "must be a non-negative integer");
    const int64_t v = it->get<int64_t>();
    if (v > limits_.max_length_bound)
      fail(path + "." + key, "at most " + std::to_string(limits_.max_length_bound));
    return v;
  }

  std::string visit(const json& s, const std::string& path, int32_t depth) {
    if (depth > limits_.max_depth)
      fail(path, "schemas nested deeper than " + std::to_string(limits_.max_depth));
    if (s.is_boolean()) {
      if (s.get<bool>()) return "value";
      fail(path, "the schema 'false' matches nothing");
    }
    if (!s.is_object()) fail(path, "a schema must be an object");
    for (const auto& [key, v] : s.items()) {
      if (!kKeywords.count(key)) fail(path, "unsupported keyword '" + key + "'");
    }
    if (const auto it = s.find("$ref"); it != s.end()) return ref(*it, path + ".$ref", depth);
    if (const auto it = s.find("const"); it != s.end()) return literal(it->dump());
    if (const auto it = s.find("enum"); it != s.end()) return enumeration(*it, path + ".enum");
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty()) fail(path + "." + key, "must be a non-empty list");
        std::string alts;
        for (size_t i = 0; i < it->size(); ++i) {
          if (i) alts += " | ";
          alts += visit((*it)[i], path + "." + key + "[" + std::to_string(i) + "]", depth + 1);
        }
        return named(alts);
      }
    }
    const auto type = s.find("type");
    if (type == s.end()) {
      if (s.contains("properties")) return typed(s, "object", path, depth);
      if (s.contains("items")) return typed(s, "array", path, depth);
      return "value";
    }
    if (type->is_string()) return typed(s, type->get<std::string>(), path, depth);
    if (!type->is_array() || type->empty())
      fail(path + ".type", "must be a type name or a non-empty list of them");
    std::string alts;
    for (const json& t : *type) {
      if (!t.is_string()) fail(path + ".type", "must be a type name or a list of them");
      if (!alts.empty()) alts += " | ";
      alts += typed(s, t.get<std::string>(), path, depth);
    }
    return named(alts);
  }

  std::string ref(const json& r, const std::string& path, int32_t depth) {
    if (!r.is_string()) fail(path, "must be a string");
    const std::string target = r.get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    std::string section, name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (target.rfind(prefix, 0) == 0) {
        section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
        name = target.substr(std::string(prefix).size());
      }
    }
    if (section.empty() || name.empty() || name.find('/') != std::string::npos)
      fail(path, "only local references \"#/$defs/NAME\" or \"#/definitions/NAME\" are supported");
    const auto sec = root_.find(section);
    if (sec == root_.end() || !sec->is_object() || !sec->contains(name))
      fail(path, "'" + target + "' is not defined");
    // Named before it is visited, so that a recursive definition refers to itself.
    const std::string rule = new_name();
    refs_.emplace(target, rule);
    add_rule(rule, visit((*sec)[name], where_ + "." + section + "." + name, depth + 1));
    return rule;
  }

  std::string enumeration(const json& e, const std::string& path) {
    if (!e.is_array() || e.empty()) fail(path, "must be a non-empty list");
    if (e.size() > limits_.max_enum_values)
      fail(path, "at most " + std::to_string(limits_.max_enum_values) + " values");
    std::string alts;
    for (const json& v : e) {
      if (!alts.empty()) alts += " | ";
      alts += literal(v.dump());
    }
    return named(alts);
  }

  std::string typed(const json& s, const std::string& type, const std::string& path,
                    int32_t depth) {
    if (type == "string") return string_rule(s, path);
    if (type == "integer" || type == "number" || type == "boolean" || type == "null") return type;
    if (type == "object") return object_rule(s, path, depth);
    if (type == "array") return array_rule(s, path, depth);
    fail(path + ".type", "unknown type '" + type + "'");
  }

  std::string string_rule(const json& s, const std::string& path) {
    const int64_t min = bound(s, "minLength", path, 0);
    const int64_t max = bound(s, "maxLength", path, -1);
    if (min == 0 && max < 0) return "string";
    if (max >= 0 && max < min) fail(path + ".maxLength", "must not be below minLength");
    const std::string rep =
        "{" + std::to_string(min) + "," + (max >= 0 ? std::to_string(max) : "") + "}";
    return named("\"\\\"\" char" + rep + " \"\\\"\"");
  }

  std::string object_rule(const json& s, const std::string& path, int32_t depth) {
    if (const auto ap = s.find("additionalProperties");
        ap != s.end() && !(ap->is_boolean() && !ap->get<bool>())) {
      fail(path + ".additionalProperties", "only false is supported");
    }
    const auto props = s.find("properties");
    if (props == s.end()) return "object";
    if (!props->is_object()) fail(path + ".properties", "must be an object");
    if (props->size() > limits_.max_properties)
      fail(path + ".properties",
           "at most " + std::to_string(limits_.max_properties) + " per object");
    n_properties_ += props->size();
    if (n_properties_ > limits_.max_total_properties) {
      fail(path + ".properties",
           "at most " + std::to_string(limits_.max_total_properties) + " in the whole schema");
    }
    std::set<std::string> required;
    if (const auto req = s.find("required"); req != s.end()) {
      if (!req->is_array()) fail(path + ".required", "must be a list of property names");
      for (const json& r : *req) {
        if (!r.is_string() || !props->contains(r.get<std::string>()))
          fail(path + ".required", "names " + r.dump() + ", which is not in properties");
        required.insert(r.get<std::string>());
      }
    }
    // Required properties first, then the optional ones, each in the schema's order.
    std::vector<std::string> must, may;
    for (const auto& [name, sub] : props->items()) {
      const std::string kv = named(literal(json(name).dump() + ":") + " " +
                                   visit(sub, path + ".properties." + name, depth + 1));
      (required.count(name) ? must : may).push_back(kv);
    }
    std::string body = "\"{\"";
    for (size_t i = 0; i < must.size(); ++i) body += (i ? " \",\" " : " ") + must[i];
    if (!must.empty()) {
      for (const std::string& kv : may) body += " (\",\" " + kv + ")?";
      return named(body + " \"}\"");
    }
    if (may.empty()) return named(body + " \"}\"");
    // No required property: any ordered subset. after_i: the optional ones after i;
    // first_i: the first present one is i or later. Linear in the number of properties.
    const size_t n = may.size();
    std::vector<std::string> after(n), first(n + 1);
    for (size_t i = 0; i < n; ++i) after[i] = new_name();
    for (size_t i = 0; i <= n; ++i) first[i] = new_name();
    for (size_t i = 0; i < n; ++i) {
      add_rule(after[i], i + 1 < n ? "(\",\" " + may[i + 1] + ")? " + after[i + 1] : "\"\"");
    }
    for (size_t i = 0; i < n; ++i)
      add_rule(first[i], may[i] + " " + after[i] + " | " + first[i + 1]);
    add_rule(first[n], "\"\"");
    return named(body + " " + first[0] + " \"}\"");
  }

  std::string array_rule(const json& s, const std::string& path, int32_t depth) {
    const auto items = s.find("items");
    const std::string item = items == s.end() ? "value" : visit(*items, path + ".items", depth + 1);
    const int64_t min = bound(s, "minItems", path, 0);
    const int64_t max = bound(s, "maxItems", path, -1);
    if (max >= 0 && max < min) fail(path + ".maxItems", "must not be below minItems");
    if (max == 0) return named("\"[\" \"]\"");
    const int64_t rest_min = std::max<int64_t>(min - 1, 0);
    const std::string rest = "(\",\" " + item + "){" + std::to_string(rest_min) + "," +
                             (max >= 0 ? std::to_string(max - 1) : "") + "}";
    const std::string list = item + " " + rest;
    return named(min == 0 ? "\"[\" (" + list + ")? \"]\"" : "\"[\" " + list + " \"]\"");
  }

  const json& root_;
  std::string where_;
  SchemaLimits limits_;
  SchemaRuleNames names_;
  std::vector<std::string> rules_;
  std::unordered_map<std::string, std::string> refs_;
  size_t bytes_ = 0, n_properties_ = 0;
  int64_t n_rules_ = 0;
};

}  // namespace

std::string schema_to_gbnf(const json& schema, const std::string& where, const SchemaLimits& limits,
                           const SchemaRuleNames& names) {
  return SchemaCompiler(schema, where, limits, names).compile();
}

std::string json_primitives_gbnf() {
  return kPrimitives;
}

std::string json_object_gbnf() {
  return std::string("root ::= object\n") + kPrimitives;
}

}  // namespace strata::grammar
