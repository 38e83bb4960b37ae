// Where tests find ../shared, the built CLI and a scratch folder.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace strata::testing {

inline std::string shared_dir() {
  const char* env = std::getenv("STRATA_SHARED");
  return env ? env : STRATA_SHARED_DEFAULT;
}

inline std::string strata_bin() {
  const char* env = std::getenv("STRATA_BIN");
  return env ? env : STRATA_BIN_DEFAULT;
}

// A per-process scratch folder under the build tree (ctest runs tests in parallel).
inline std::string scratch_dir() {
  const auto dir = std::filesystem::path(STRATA_BUILD_DIR) / "test-scratch" /
                   std::to_string(static_cast<long>(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace strata::testing
