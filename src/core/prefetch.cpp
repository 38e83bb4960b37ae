#include "core/prefetch.h"

#include <cstdlib>
#include <string_view>

namespace strata {

bool page_prefetch_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("STRATA_NO_PAGE_PREFETCH");
    return v == nullptr || *v == '\0' || std::string_view(v) == "0";
  }();
  return enabled;
}

}  // namespace strata
