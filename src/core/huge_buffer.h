// A zero-filled, page-aligned byte buffer backed by anonymous memory that asks the kernel
// for transparent huge pages (madvise(MADV_HUGEPAGE); honoured when THP is in "always" or
// "madvise" mode, ignored otherwise).
//
// Why: the KV cache and the weights are read in page-sized or smaller pieces scattered over
// hundreds of MiB. With 4 KiB pages nearly every piece is a TLB miss and a fresh start for
// the hardware prefetcher; 2 MiB pages remove most of both (see docs/BENCHMARKS.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Throws strata::Error when the memory cannot be mapped.
  explicit HugePageBuffer(size_t bytes);
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release() noexcept;

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

}  // namespace strata
