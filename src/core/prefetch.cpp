#include "core/prefetch.h"

#include <cstdlib>
#include <string_view>

namespace strata {

namespace {
// Whether the environment variable `name` is unset, empty or "0".
bool env_unset(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' || std::string_view(v) == "0";
}
}  // namespace

bool page_prefetch_enabled() {
  static const bool enabled = env_unset("STRATA_NO_PAGE_PREFETCH");
  return enabled;
}

bool decode_prefetch_enabled() {
  static const bool enabled = env_unset("STRATA_NO_DECODE_PREFETCH");
  return enabled;
}

}  // namespace strata
