// A software prefetch that the compiler keeps.
//
// GCC 12 deletes __builtin_prefetch / _mm_prefetch loops whose only effect is the
// prefetch (found in paged attention: the next-tile prefetch compiled to nothing at -O2),
// so the x86 instruction is issued through volatile asm; elsewhere it falls back to the
// builtin.
#pragma once

namespace strata {

inline void prefetch_l1(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace strata
