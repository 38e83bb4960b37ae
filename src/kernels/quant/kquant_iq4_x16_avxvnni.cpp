// kquant_iq4_x16_avx2.cpp compiled again with AVX-VNNI (vpdpbusd on 256-bit vectors), as
// kernels_avx2.h's avx2vnni:: functions; the same outputs bit for bit.
#define STRATA_AVX2_NS avx2vnni
#include "kernels/quant/kquant_iq4_x16_avx2.cpp"  // NOLINT(bugprone-suspicious-include)
