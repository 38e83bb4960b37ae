// Scalar reference kernels for the plain float types (F32, F16, BF16).
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/kernels_ref.h"

namespace strata::kernels::ref {

void f32_to_float(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void f32_from_float(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

float f32_vec_dot(int64_t n, const void* w, const void* a) {
  const float* wf = static_cast<const float*>(w);
  const float* af = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(wf[i]) * af[i];
  return static_cast<float>(sum);
}

void f16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void f16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

float f16_vec_dot(int64_t n, const void* w, const void* a) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  const float* af = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(wh[i])) * af[i];
  return static_cast<float>(sum);
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

void bf16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
}

float bf16_vec_dot(int64_t n, const void* w, const void* a) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  const float* af = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(wh[i])) * af[i];
  return static_cast<float>(sum);
}

}  // namespace strata::kernels::ref
