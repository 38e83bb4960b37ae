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
#include <new>
#include <vector>

namespace strata {

// Memory for a std::vector that may grow to megabytes (a model's batch buffers): from 1 MiB
// on, 2 MiB-aligned anonymous memory advised to be huge pages (zero-filled by the kernel);
// smaller, operator new. With 4 KiB pages the first forward of a 512-token batch spent
// ~100 ms in page faults zero-filling ~40 MiB of buffers (docs/BENCHMARKS.md).
void* huge_page_allocate(size_t bytes);  // throws std::bad_alloc
void huge_page_deallocate(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(huge_page_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { huge_page_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

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

  // Backs the pages of bytes [offset, offset + bytes) now (as huge pages where granted)
  // instead of at their first write: madvise(MADV_POPULATE_WRITE), or one write per 4 KiB
  // page on kernels without it. Throws strata::Error when the memory cannot be backed or
  // the range is outside the buffer.
  void populate(size_t offset, size_t bytes);

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
