// legacy_x16_avx2.cpp's Q4_1/Q5_0/Q5_1/IQ4_NL_X16 and K-pair kernels compiled again with
// AVX-VNNI (vpdpbusd on 256-bit vectors), as kernels_avx2.h's avx2vnni:: functions; the
// same outputs bit for bit.
#define STRATA_AVX2_NS avx2vnni
#include "kernels/quant/legacy_x16_avx2.cpp"  // NOLINT(bugprone-suspicious-include)
