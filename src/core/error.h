// Error reporting inside the library: a strata::Error exception carries a message that
// names the file, field or parameter at fault. Library code never calls exit(); the CLI
// and the HTTP layer convert errors into exit codes and error responses at the boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace strata
