#include "server/json_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/api_error.h"

namespace strata::server {
namespace {

std::string range_text(int64_t lo, int64_t hi) {
  return "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string format_double(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

const nlohmann::json* JsonFields::get(const char* key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> JsonFields::integer(const char* key, int64_t lo, int64_t hi) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo)
      throw invalid_field(name(key), range_text(lo, hi));
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) throw invalid_field(name(key), range_text(lo, hi));
    return i;
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      throw invalid_field(name(key), "must be an integer");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      throw invalid_field(name(key), range_text(lo, hi));
    return static_cast<int64_t>(d);
  }
  throw invalid_field(name(key), "must be an integer");
}

std::optional<uint64_t> JsonFields::integer_bits(const char* key) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return static_cast<uint64_t>(v->get<int64_t>());
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= -9.2e18 && d <= 1.8e19) {
      return d < 0 ? static_cast<uint64_t>(static_cast<int64_t>(d)) : static_cast<uint64_t>(d);
    }
  }
  throw invalid_field(name(key), "must be a 64-bit integer");
}

std::optional<double> JsonFields::number(const char* key, double lo, double hi,
                                         bool lo_open) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid_field(name(key), "must be a number");
  const double d = v->get<double>();
  const bool low_ok = lo_open ? d > lo : d >= lo;
  if (!std::isfinite(d) || !low_ok || d > hi) {
    throw invalid_field(name(key), "must be in " + std::string(lo_open ? "(" : "[") +
                                       format_double(lo) + ", " + format_double(hi) + "]");
  }
  return d;
}

std::optional<bool> JsonFields::boolean(const char* key) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_field(name(key), "must be a boolean");
  return v->get<bool>();
}

std::optional<std::string> JsonFields::string(const char* key) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_field(name(key), "must be a string");
  return v->get<std::string>();
}

int json_nesting_depth(const std::string& text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

nlohmann::json parse_json_object(const std::string& body, int max_depth) {
  if (json_nesting_depth(body) > max_depth) {
    throw ApiError(400,
                   "invalid JSON: nested deeper than " + std::to_string(max_depth) + " levels");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(400, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

}  // namespace strata::server
