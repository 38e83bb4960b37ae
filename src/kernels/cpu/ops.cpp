#include "kernels/cpu/ops.h"

#include <cmath>

#include "kernels/cpu/ops_avx2.h"
#include "kernels/cpu/ops_avx512.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {

void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  cpu_has_avx2_fma() ? avx2::rmsnorm(x, weight, out, n, eps) : ref::rmsnorm(x, weight, out, n, eps);
}

void swiglu(float* gate, const float* up, int64_t n) {
  switch (cpu_kernel_isa()) {
    case KernelIsa::avx512_vnni:
      return avx512::swiglu(gate, up, n);
    case KernelIsa::avx2:
      return avx2::swiglu(gate, up, n);
    default:
      return ref::swiglu(gate, up, n);
  }
}

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox) {
  cpu_has_avx2_fma() ? avx2::rope(x, n_heads, head_dim, rot_dim, cos, sin, neox)
                     : ref::rope(x, n_heads, head_dim, rot_dim, cos, sin, neox);
}

void add(float* x, const float* y, int64_t n) {
  cpu_has_avx2_fma() ? avx2::add(x, y, n) : ref::add(x, y, n);
}

void scale(float* out, const float* in, float s, int64_t n) {
  cpu_has_avx2_fma() ? avx2::scale(out, in, s, n) : ref::scale(out, in, s, n);
}

int64_t argmax(const float* x, int64_t n) {
  return cpu_has_avx2_fma() ? avx2::argmax(x, n) : ref::argmax(x, n);
}

namespace ref {

int64_t argmax(const float* x, int64_t n) {
  // The best value kept in a register: comparing against x[best] reloads it every step,
  // a dependency chain through memory.
  int64_t best = 0;
  float top = n > 0 ? x[0] : 0.0f;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > top) {
      top = x[i];
      best = i;
    }
  }
  return best;
}

void add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void scale(float* out, const float* in, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] * s;
}

void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  // Accumulate in double: the norm of a 8K-wide row summed in float drifts measurably.
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox) {
  const int64_t half = rot_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos[i] - x1 * sin[i];
      v[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

}  // namespace ref
}  // namespace strata::kernels
