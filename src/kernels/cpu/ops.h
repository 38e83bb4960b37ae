// Element-wise and row-wise CPU ops of the transformer block. rmsnorm, swiglu, rope, add
// and scale run AVX2 versions where the CPU has them (ops_avx2.cpp), ref:: below otherwise
// (the scalar rope was 1% of a 512-token prefill, the scalar residual add and attention's
// output scaling 0.9% each: GCC -O2 leaves such loops scalar). Matmuls live in matmul.h. All are
// per-row functions with a fixed order, so results do not depend on the batch.
#pragma once

#include <cstdint>

namespace strata::kernels {

// out[i] = x[i] / rms(x) * weight[i], rms(x) = sqrt(mean(x^2) + eps). out may alias x.
void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps);

// gate[i] = silu(gate[i]) * up[i]  (SwiGLU), in place on gate.
void swiglu(float* gate, const float* up, int64_t n);

// Rotates the first `rot_dim` dims of each of `n_heads` heads (each `head_dim` long) in
// place. cos/sin hold rot_dim/2 values for this token's position. Interleaved layout
// rotates pairs (2i, 2i+1) (GGUF `llama`); NeoX layout rotates (i, i + rot_dim/2).
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox);

// x[i] += y[i] (the residual add).
void add(float* x, const float* y, int64_t n);

// out[i] = in[i] * s. out may alias in.
void scale(float* out, const float* in, float s, int64_t n);

// The index of the first maximum of x[0..n) by `>`: NaNs never win, +0 and -0 tie, and
// 0 when x[0] is NaN or n is 0 (greedy sampling's token).
int64_t argmax(const float* x, int64_t n);

namespace ref {  // the scalar definitions, also what the AVX2 versions are tested against
void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps);
void swiglu(float* gate, const float* up, int64_t n);
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox);
void add(float* x, const float* y, int64_t n);
void scale(float* out, const float* in, float s, int64_t n);
int64_t argmax(const float* x, int64_t n);
}  // namespace ref

}  // namespace strata::kernels
