// Errors of the HTTP API. Request handling throws ApiError; the router turns it into
// an OpenAI-shaped body: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <stdexcept>
#include <string>

namespace strata::server {

class ApiError : public std::runtime_error {
 public:
  // `code` defaults to a short name of the status ("invalid_request", "queue_full", ...).
  ApiError(int status, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message),
        status_(status),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& param() const { return param_; }  // empty: no particular field
  std::string type() const;                            // OpenAI's error type for the status
  std::string code() const;

 private:
  int status_;
  std::string param_;
  std::string code_;
};

// 400 naming the field at fault: "temperature: must be in [0, 2]".
inline ApiError invalid_field(const std::string& field, const std::string& problem) {
  return ApiError(400, field + ": " + problem, field);
}

// The JSON body of an error response.
std::string error_body(const ApiError& e);

}  // namespace strata::server
