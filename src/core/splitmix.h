// SplitMix64: a small, fast, well-mixed generator that gives the same sequence on every
// platform (unlike <random>'s distributions), for model weights and evaluation prompts
// that must be reproducible bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float symmetric() {
    return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0);
  }
  // Uniform index in [0, n) (for small n the modulo bias is below 2^-50).
  size_t index(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

}  // namespace strata
