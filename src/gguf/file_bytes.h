// The bytes of a GGUF file: a read-only memory mapping of a file on disk, or a buffer
// the object owns (for tests and for files built in memory). Move-only; unmaps on
// destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/huge_buffer.h"

namespace strata::gguf {

class FileBytes {
 public:
  FileBytes() = default;
  // Maps `path` read-only. Throws strata::Error naming the path when it cannot be opened,
  // is not a regular file, is empty or cannot be mapped.
  static FileBytes map(const std::string& path);
  // Reads `path` into anonymous memory on transparent huge pages (core/huge_buffer.h):
  // decode reads every weight once per token, and from a 4 KiB-page file mapping it ran
  // slower (docs/BENCHMARKS.md). Same errors as map(), plus read failures.
  // Ranges of bytes_per_thread (rounded up to 2 MiB) are read by threads of their own.
  static FileBytes read_into_huge_pages(const std::string& path,
                                        size_t bytes_per_thread = size_t{64} << 20);
  static FileBytes own(std::vector<uint8_t> bytes);

  FileBytes(FileBytes&& other) noexcept;
  FileBytes& operator=(FileBytes&& other) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // The bytes for rewriting in place (a model repacking its weights at load); nullptr for a
  // read-only file mapping.
  uint8_t* writable_data() {
    if (map_addr_ != nullptr) return nullptr;
    return owned_.empty() ? huge_.data() : owned_.data();
  }

 private:
  void release() noexcept;

  void* map_addr_ = nullptr;  // non-null only for a mapping
  size_t map_len_ = 0;
  std::vector<uint8_t> owned_;
  HugePageBuffer huge_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace strata::gguf
