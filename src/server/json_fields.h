// Typed, range-checked reads of a JSON request object's fields. A missing field or an
// explicit null reads as "absent" (std::nullopt); a field of the wrong type or out of
// range throws a 400 ApiError naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace strata::server {

class JsonFields {
 public:
  // `prefix` names the object in messages ("messages[2].").
  explicit JsonFields(const nlohmann::json& object, std::string prefix = {});

  const nlohmann::json* get(const char* key) const;  // null when absent or JSON null

  // Integers; a float with an integral value (10.0) is accepted, as OpenAI's API does.
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const;
  // Any integer in [-2^63, 2^64), returned as its 64-bit pattern (seeds).
  std::optional<uint64_t> integer_bits(const char* key) const;
  // Numbers in [lo, hi]; with lo_open, in (lo, hi].
  std::optional<double> number(const char* key, double lo, double hi, bool lo_open = false) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<std::string> string(const char* key) const;

  std::string name(const char* key) const { return prefix_ + key; }

 private:
  const nlohmann::json& object_;
  std::string prefix_;
};

// Nesting depth of the JSON text (arrays and objects), computed without parsing it, so
// hostile bodies are refused before any recursive code sees them.
int json_nesting_depth(const std::string& text);

// Parses a request body: must be a JSON object no deeper than `max_depth`.
nlohmann::json parse_json_object(const std::string& body, int max_depth = 64);

}  // namespace strata::server
