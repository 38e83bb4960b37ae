// Overflow-checked arithmetic for sizes and offsets derived from untrusted input.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace strata {

// Returns a + b, or nullopt when the sum does not fit in uint64_t.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Returns a * b, or nullopt when the product does not fit in uint64_t.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds `value` up to a multiple of `alignment` (> 0), or nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
  if (alignment == 0) return std::nullopt;
  const uint64_t rem = value % alignment;
  if (rem == 0) return value;
  return checked_add(value, alignment - rem);
}

}  // namespace strata
