// Helpers for the GGUF tests: a byte builder for hand-made (often malformed) files and a
// check that loading fails with a strata::Error whose message names the field.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"

namespace strata::gguf::test {

// Appends little-endian GGUF fields one at a time, so a test can write any value,
// including ones the writer refuses to produce.
class ByteBuilder {
 public:
  ByteBuilder& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  template <class T>
  ByteBuilder& put(T v) {
    return raw(&v, sizeof(v));
  }
  ByteBuilder& u8(uint8_t v) { return put(v); }
  ByteBuilder& u32(uint32_t v) { return put(v); }
  ByteBuilder& u64(uint64_t v) { return put(v); }
  ByteBuilder& i64(int64_t v) { return put(v); }
  ByteBuilder& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }

  ByteBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  ByteBuilder& kv_u32(const std::string& key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(ValueType::U32)).u32(v);
  }
  ByteBuilder& kv_string(const std::string& key, const std::string& v) {
    return str(key).u32(static_cast<uint32_t>(ValueType::STRING)).str(v);
  }
  ByteBuilder& kv_string_array(const std::string& key, const std::vector<std::string>& v) {
    str(key).u32(static_cast<uint32_t>(ValueType::ARRAY));
    u32(static_cast<uint32_t>(ValueType::STRING)).u64(v.size());
    for (const auto& s : v) str(s);
    return *this;
  }
  // Writes n_dims = ne.size() unless `n_dims` overrides it.
  ByteBuilder& tensor(const std::string& name, const std::vector<int64_t>& ne, DType type,
                      uint64_t offset, int64_t n_dims = -1) {
    str(name).u32(static_cast<uint32_t>(n_dims >= 0 ? n_dims : static_cast<int64_t>(ne.size())));
    for (int64_t d : ne) i64(d);
    return u32(static_cast<uint32_t>(type)).u64(offset);
  }
  ByteBuilder& pad_to(uint64_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
    return *this;
  }
  ByteBuilder& zeros(uint64_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }

  std::vector<uint8_t> bytes;
};

inline constexpr const char* kHostileName = "hostile.gguf";

// Succeeds when loading `bytes` throws strata::Error whose message starts with the file
// name and contains every string in `parts`.
inline ::testing::AssertionResult load_fails_with(std::vector<uint8_t> bytes,
                                                  const std::vector<std::string>& parts) {
  try {
    GgufFile::from_buffer(std::move(bytes), kHostileName);
  } catch (const strata::Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(std::string(kHostileName) + ": ", 0) != 0) {
      return ::testing::AssertionFailure() << "message does not start with the file name: " << msg;
    }
    for (const auto& p : parts) {
      if (msg.find(p) == std::string::npos) {
        return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << msg;
      }
    }
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-strata exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "loaded without an error";
}

// Finds `needle` in `bytes` (e.g. a tensor name) and returns its offset; -1 when absent.
inline int64_t find_bytes(const std::vector<uint8_t>& bytes, const std::string& needle) {
  if (needle.size() > bytes.size()) return -1;
  for (size_t i = 0; i + needle.size() <= bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, needle.data(), needle.size()) == 0) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

template <class T>
void poke(std::vector<uint8_t>& bytes, size_t offset, T v) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

// Deterministic bytes for tensor data: byte i is a hash of (seed, i).
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

// A small file with a few metadata types, a 4-token vocabulary and three tensors; the
// last tensor's size is a multiple of 32, so the file ends exactly where its data ends.
inline GgufWriter small_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string_array("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b"});
  w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.5f, 3.25f});
  w.set_value("nested", Value::make_array(Array::of_arrays(
                            {Array::of_i32({1, -2}), Array::of_strings({"x", "yz"})})));
  const auto embd = pattern_bytes(8 * 4 * 4, 1);
  w.add_tensor("token_embd.weight", DType::F32, {8, 4}, embd.data(), embd.size());
  const auto q = pattern_bytes(2 * 34, 2);
  w.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {32, 2}, q.data(), q.size());
  const auto norm = pattern_bytes(16 * 2, 3);
  w.add_tensor("output_norm.weight", DType::F16, {16}, norm.data(), norm.size());
  return w;
}

inline std::string shared_dir() {
  if (const char* env = std::getenv("STRATA_SHARED"); env && *env) return env;
  return STRATA_SHARED_DEFAULT;
}

}  // namespace strata::gguf::test
