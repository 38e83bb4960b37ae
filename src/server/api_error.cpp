#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace strata::server {

std::string ApiError::type() const {
  switch (status_) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    default:
      return status_ >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string ApiError::code() const {
  if (!code_.empty()) return code_;
  switch (status_) {
    case 400:
      return "invalid_request";
    case 401:
      return "invalid_api_key";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "request_too_large";
    case 429:
      return "queue_full";
    case 503:
      return "unavailable";
    default:
      return status_ >= 500 ? "internal_error" : "error";
  }
}

std::string error_body(const ApiError& e) {
  nlohmann::json j = {{"error",
                       {{"message", e.what()},
                        {"type", e.type()},
                        {"param", e.param().empty() ? nlohmann::json() : nlohmann::json(e.param())},
                        {"code", e.code()}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace strata::server
