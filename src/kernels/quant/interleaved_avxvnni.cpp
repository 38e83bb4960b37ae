// interleaved_avx2.cpp's Q4_0_X16 and Q8_0_X16 kernels compiled again with AVX-VNNI
// (vpdpbusd on 256-bit vectors: Intel's cores since Alder Lake without AVX-512), as
// kernels_avx2.h's avx2vnni:: functions; the same outputs bit for bit.
#define STRATA_AVX2_NS avx2vnni
#include "kernels/quant/interleaved_avx2.cpp"  // NOLINT(bugprone-suspicious-include)
