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

// A per-process scratch folder under the build tree (ctest runs tests in parallel),
// removed when the process exits: the suite writes hundreds of models and logs, and CI's
// disk is not large enough to keep them all.
class ScratchDir {
 public:
  ScratchDir()
      : owner_(::getpid()),
        path_((std::filesystem::path(STRATA_BUILD_DIR) / "test-scratch" /
               std::to_string(static_cast<long>(owner_)))
                  .string()) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    // A forked child that exits normally must not delete its parent's files.
    if (::getpid() != owner_ || std::getenv("STRATA_KEEP_TEST_SCRATCH")) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  pid_t owner_;
  std::string path_;
};

inline std::string scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

}  // namespace strata::testing
