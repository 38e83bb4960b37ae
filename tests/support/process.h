// Runs a shell command and captures its stdout (tests of the CLI's exact output).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace strata::testing {

struct CommandResult {
  int exit_code;
  std::string out;
};

inline CommandResult run_command(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace strata::testing
