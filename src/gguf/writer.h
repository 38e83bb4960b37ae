// GgufWriter builds a GGUF v3 file: metadata in insertion order, then tensor infos,
// then each tensor's data at an offset aligned to general.alignment (32 by default).
// Everything handed to it is validated when it is added, so write() only fails on I/O
// or when a lazy tensor's fill callback throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "gguf/value.h"

namespace strata::gguf {

class GgufWriter {
 public:
  // Setting an existing key replaces its value and keeps its position.
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_i64(const std::string& key, int64_t v);
  void set_f32(const std::string& key, float v);
  void set_f64(const std::string& key, double v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, std::string v);
  void set_string_array(const std::string& key, std::vector<std::string> v);
  void set_f32_array(const std::string& key, std::vector<float> v);
  void set_i32_array(const std::string& key, std::vector<int32_t> v);
  // Copies any metadata value (e.g. from another file). Throws strata::Error when the
  // value is malformed (see validate_value) or when general.alignment is not a u32
  // nonzero power of two.
  void set_value(const std::string& key, const Value& v);
  bool has(std::string_view key) const;
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }

  // Copies `n_bytes` of `data`. Throws strata::Error on a duplicate or empty name, a
  // shape outside 1..4 dimensions of sizes >= 1, a row length (ne[0]) that is not a
  // multiple of the type's block size, or n_bytes different from the shape's size.
  void add_tensor(const std::string& name, DType type, std::vector<int64_t> ne, const void* data,
                  size_t n_bytes);
  // For huge generated models: `fill` is called during write() with a buffer of the
  // tensor's byte size to fill; nothing is held in memory before that.
  void add_tensor_lazy(const std::string& name, DType type, std::vector<int64_t> ne,
                       std::function<void(uint8_t* dst)> fill);

  // Writes to `path` + ".tmp" and renames it over `path`, so a failed write never leaves
  // a truncated file under the final name.
  void write(const std::string& path) const;
  std::vector<uint8_t> write_to_buffer() const;

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes;
    std::vector<uint8_t> data;           // add_tensor
    std::function<void(uint8_t*)> fill;  // add_tensor_lazy
  };
  using Sink = std::function<void(const uint8_t* data, size_t n)>;

  uint64_t checked_tensor_bytes(const std::string& name, DType type,
                                const std::vector<int64_t>& ne) const;
  uint64_t alignment() const;
  void emit(const Sink& sink) const;

  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace strata::gguf
