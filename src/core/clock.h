// Wall-independent timestamps: seconds on the steady clock, for latencies and rates.
#pragma once

#include <chrono>

namespace strata {

// Seconds since the steady clock's epoch (an arbitrary point, fixed while the process runs);
// only differences between two calls mean anything.
inline double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace strata
