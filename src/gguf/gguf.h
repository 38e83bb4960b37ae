// GGUF v2/v3 reader over a read-only memory mapping, and (in writer.h) a GGUF v3 writer.
//
// File layout (little-endian): magic "GGUF", u32 version, u64 tensor_count,
// u64 metadata_kv_count, the key/value pairs, the tensor infos, padding up to
// `alignment`, then the tensor data section. GgufFile parses and validates everything
// up front: once open() returns, every tensor's bytes lie inside the file, no two
// tensors overlap, and every size fits in 64 bits. Any malformed input makes the
// constructor throw strata::Error naming the file, the field and its byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "gguf/file_bytes.h"
#include "gguf/value.h"
#include "gguf/writer.h"

namespace strata::gguf {

namespace detail {
class Parser;
}

// Limits on what a file may declare; each is far above what real models use and keeps
// hostile counts from driving huge allocations.
inline constexpr uint64_t kMaxTensorCount = uint64_t{1} << 20;
inline constexpr uint64_t kMaxKvCount = uint64_t{1} << 20;
inline constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxKeyBytes = 65535;  // the GGUF spec's key length limit
inline constexpr uint64_t kMaxTensorNameBytes = 256;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint64_t kDefaultAlignment = 32;

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the row length (contiguous dimension)
  DType type;
  uint64_t offset;  // relative to the data section start
  uint64_t n_elements;
  uint64_t n_bytes;
};

class GgufFile {
 public:
  static GgufFile open(const std::string& path);  // mmap, read-only
  // The whole file read into huge-page memory (FileBytes::read_into_huge_pages).
  static GgufFile read(const std::string& path);
  static GgufFile from_buffer(std::vector<uint8_t> bytes, std::string name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();  // unmaps

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }  // general.alignment or 32
  // Absolute file offset of the tensor data section. In a file without tensors (a
  // vocabulary-only file) this may lie past the end of the file.
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Value* find(std::string_view key) const;
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }

  // Typed getters. The forms without a fallback throw when the key is missing; all
  // forms throw when the value has an incompatible type or is out of range. Integer
  // getters accept any integer type; get_float accepts float and integer types.
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, std::string_view fallback) const;
  uint64_t get_uint(std::string_view key) const;
  uint64_t get_uint(std::string_view key, uint64_t fallback) const;
  int64_t get_int(std::string_view key) const;
  int64_t get_int(std::string_view key, int64_t fallback) const;
  double get_float(std::string_view key) const;
  double get_float(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;  // float or integer elements
  std::vector<int64_t> get_int_array(std::string_view key) const;  // integer elements
  // The array stored under `key` without copying it (e.g. a 150k-string vocabulary via
  // ->strings()); throws when missing or not an array.
  const Array& get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name) const;  // throws "tensor 'x' not found"
  // Pointer into the mapping; throws when `t` does not describe bytes of this file.
  const uint8_t* tensor_data(const TensorInfo& t) const;
  std::span<const uint8_t> tensor_bytes(const TensorInfo& t) const;
  // The tensor's bytes for rewriting in place, or nullptr when the file is a read-only
  // mapping (open()). After a rewrite they no longer match the file on disk.
  uint8_t* writable_tensor_data(const TensorInfo& t);

 private:
  friend class detail::Parser;  // reader.cpp fills in the fields below

  GgufFile(FileBytes bytes, std::string name);

  const Value& require(std::string_view key) const;
  uint64_t value_offset(std::string_view key) const;
  [[noreturn]] void fail_key(std::string_view key, const std::string& problem) const;

  FileBytes bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<uint64_t> value_offsets_;  // file offset of each metadata value (for errors)
  std::map<std::string, size_t, std::less<>> key_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace strata::gguf
