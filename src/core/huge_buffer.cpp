#include "core/huge_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace strata {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeAllocationMin = size_t{1} << 20;

size_t whole_huge_pages(size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}
}  // namespace

void* huge_page_allocate(size_t bytes) {
  if (bytes < kHugeAllocationMin) return ::operator new(bytes);
  if (bytes > SIZE_MAX - 2 * kHugePage) throw std::bad_alloc();
  // Map one huge page more than needed and unmap the ends, so the buffer starts on a 2 MiB
  // boundary (the kernel backs only aligned 2 MiB ranges with huge pages).
  const size_t size = whole_huge_pages(bytes);
  const size_t mapped = size + kHugePage;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (start > base) ::munmap(p, start - base);
  const uintptr_t tail = start + size;
  if (base + mapped > tail) ::munmap(reinterpret_cast<void*>(tail), base + mapped - tail);
  ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);  // advice only
  return reinterpret_cast<void*>(start);
}

void huge_page_deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kHugeAllocationMin) {
    ::operator delete(p);
  } else {
    ::munmap(p, whole_huge_pages(bytes));
  }
}

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  if (bytes > SIZE_MAX - kHugePage) throw Error("HugePageBuffer: size overflows");
  // Whole huge pages, so the last one can be huge too; anonymous memory is zero-filled.
  mapped_ = whole_huge_pages(bytes);
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw Error("cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  }
  ::madvise(p, mapped_, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
  data_ = static_cast<uint8_t*>(p);
}

void HugePageBuffer::populate(size_t offset, size_t bytes) {
  if (offset > size_ || bytes > size_ - offset) throw Error("HugePageBuffer: range outside");
  if (bytes == 0) return;
  constexpr size_t kPage = 4096;
  const size_t begin = offset / kPage * kPage;
  const size_t end = std::min(mapped_, (offset + bytes + kPage - 1) / kPage * kPage);
#ifdef MADV_POPULATE_WRITE
  if (::madvise(data_ + begin, end - begin, MADV_POPULATE_WRITE) == 0) return;
  if (errno != EINVAL) {
    throw Error("cannot back " + std::to_string(end - begin) +
                " bytes of memory: " + std::strerror(errno));
  }
#endif
  // Unwritten memory is zero, so a zero write changes nothing but backs the page; a page
  // already written keeps its byte (read, then written back).
  volatile uint8_t* p = data_;
  for (size_t i = begin; i < end; i += kPage) p[i] = p[i];
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  release();
}

void HugePageBuffer::release() noexcept {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = 0;
}

}  // namespace strata
