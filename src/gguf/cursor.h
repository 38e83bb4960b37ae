// Bounds-checked little-endian reads over the untrusted bytes of a GGUF file (internal to
// src/gguf). Every read checks the remaining length first, so no input can make the
// reader touch memory outside [data, data + size). Failures throw strata::Error with the
// file name, the field being read and its byte offset.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/error.h"

namespace strata::gguf::detail {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

// Names the field being read, e.g. "key 'tokenizer.ggml.tokens'" with element index 7.
// The text is only assembled when an error is reported, so reading a 150k-entry
// vocabulary builds no strings for the field names.
struct Field {
  static constexpr uint64_t kNoIndex = ~uint64_t{0};
  std::string_view name;
  uint64_t index = kNoIndex;

  std::string str() const {
    std::string s(name);
    if (index != kNoIndex) s += "[" + std::to_string(index) + "]";
    return s;
  }
};

// Formats "<file>: <field> at offset <offset>: <problem>".
[[noreturn]] inline void fail_at(const std::string& file, const std::string& field, uint64_t offset,
                                 const std::string& problem) {
  throw Error(file + ": " + field + " at offset " + std::to_string(offset) + ": " + problem);
}

class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  uint64_t offset() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& file() const { return file_; }

  template <class T>
  T read(const Field& field) {
    static_assert(std::is_trivially_copyable_v<T>);
    require(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A GGUF string: u64 byte length, then the bytes (no terminator).
  std::string read_string(const Field& field, uint64_t max_len) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(field);
    if (len > max_len) {
      fail_at(file_, field.str() + " length", at,
              std::to_string(len) + " exceeds the limit of " + std::to_string(max_len) + " bytes");
    }
    if (len > remaining()) {
      fail_at(file_, field.str() + " length", at,
              std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                  " bytes left in the file");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

  [[noreturn]] void fail(const Field& field, uint64_t offset, const std::string& problem) const {
    fail_at(file_, field.str(), offset, problem);
  }

 private:
  void require(uint64_t n, const Field& field) const {
    if (n > remaining()) {
      fail(field, pos_,
           "needs " + std::to_string(n) + " bytes but the file ends after " +
               std::to_string(remaining()));
    }
  }

  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

}  // namespace strata::gguf::detail
