// Software prefetches that the compiler keeps, and the page kick of streaming kernels.
//
// GCC 12 deletes __builtin_prefetch / _mm_prefetch loops whose only effect is the
// prefetch (found in paged attention: the next-tile prefetch compiled to nothing at -O2),
// so the x86 instruction is issued through volatile asm; elsewhere it falls back to the
// builtin.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

inline void prefetch_l1(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// Into L2 (and the levels below), not L1: for data needed after the working set now in L1.
inline void prefetch_l2(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// The page kick. Hardware stream prefetchers do not cross a 4 KiB boundary (physical
// pages may not be contiguous), huge pages or not, so a kernel streaming weights from
// memory starts every 4 KiB with demand misses until the prefetcher has found the stream
// again. A decode GEMV streams about 4 KiB every 120 ns per core here, so that restart
// is a large part of the time: one prefetch of a page's first line, issued while the
// kernel is still kPageLeadBytes before it, starts the stream early. Measured on a
// model-shaped sequence of Q4_0 GEMVs on 2 threads (2 KiB lead): 58 -> 69 GB/s, the rate
// of a bare read loop; prefetching every line ahead instead, or touching lines with
// loads, made it slower (43-55 GB/s), because the hardware prefetcher then backs off.
inline constexpr uintptr_t kPageBytes = 4096;
inline constexpr uintptr_t kPageLeadBytes = 2048;

// fn(page) for each page start in (lo, hi], highest first.
template <class Fn>
inline void for_each_page_start(uintptr_t lo, uintptr_t hi, Fn&& fn) {
  for (uintptr_t page = hi & ~(kPageBytes - 1); page > lo; page -= kPageBytes) fn(page);
}

// The pages a loop kicks when it consumes `step` bytes at p: those that start in
// (p + kPageLeadBytes, p + kPageLeadBytes + step].
template <class Fn>
inline void for_each_page_ahead(const void* p, size_t step, Fn&& fn) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) + kPageLeadBytes;
  for_each_page_start(a, a + step, fn);
}

// Called once per `step` bytes consumed at p (a loop over blocks): prefetches the first
// line of each page for_each_page_ahead names. A prefetch never faults, so reaching past
// the end of the data is harmless.
inline void prefetch_page_ahead(const void* p, size_t step) {
  for_each_page_ahead(p, step,
                      [](uintptr_t page) { prefetch_l1(reinterpret_cast<const void*>(page)); });
}

}  // namespace strata
