// A small JSON Schema validator for the keywords strata's schema grammars support
// (grammar/json_schema.h), written independently of the grammar so that tests compare
// the two. Strings' lengths count code points.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace strata::grammar::schema_check {

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline bool check(const nlohmann::json& v, const nlohmann::json& s, const nlohmann::json& root,
                  std::string& why) {
  using nlohmann::json;
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    const std::string sec = r.rfind("#/$defs/", 0) == 0 ? "$defs" : "definitions";
    return check(v, root[sec][r.substr(r.find('/', 2) + 1)], root, why);
  }
  if (s.contains("const") && v != s["const"]) return why = "const", false;
  if (s.contains("enum")) {
    bool found = false;
    for (const json& e : s["enum"]) found = found || e == v;
    if (!found) return why = "enum", false;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    bool any = false;
    for (const json& sub : s[key]) any = any || check(v, sub, root, why);
    if (!any) return why = key, false;
  }
  if (s.contains("type")) {
    const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
    bool ok = false;
    for (const json& t : types) {
      const std::string n = t;
      ok = ok || (n == "string" && v.is_string()) || (n == "integer" && v.is_number_integer()) ||
           (n == "number" && v.is_number()) || (n == "boolean" && v.is_boolean()) ||
           (n == "null" && v.is_null()) || (n == "object" && v.is_object()) ||
           (n == "array" && v.is_array());
    }
    if (!ok) return why = "type " + s["type"].dump() + " of " + v.dump(), false;
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get<std::string>());
    if (s.contains("minLength") && n < s["minLength"].get<size_t>())
      return why = "minLength", false;
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>())
      return why = "maxLength", false;
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
      return why = "minItems", false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
      return why = "maxItems", false;
    if (s.contains("items")) {
      for (const json& item : v)
        if (!check(item, s["items"], root, why)) return false;
    }
  }
  if (v.is_object() && s.contains("properties")) {
    const json& props = s["properties"];
    for (const auto& [k, item] : v.items()) {
      if (!props.contains(k)) return why = "extra property " + k, false;
      if (!check(item, props[k], root, why)) return why = k + ": " + why, false;
    }
    if (s.contains("required")) {
      for (const json& r : s["required"])
        if (!v.contains(r.get<std::string>())) return why = "missing " + r.dump(), false;
    }
  }
  return true;
}

// Whether `text` is JSON valid under `schema`.
inline bool valid(const std::string& text, const nlohmann::json& schema, std::string& why) {
  const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  if (v.is_discarded()) return why = "not JSON", false;
  return check(v, schema, schema, why);
}

}  // namespace strata::grammar::schema_check
