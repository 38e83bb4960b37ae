// The steady clock in seconds, for timings that are differences of two readings.
#pragma once

#include <chrono>

namespace strata {

inline double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace strata
