// A vectorized expf for x <= 0, written once over a vector type V (attention's fold,
// the SwiGLU kernel). V provides set1, add, mul, fma, max, round_nearest (to the nearest
// integer) and times_pow2 (y * 2^n for integral n).
#pragma once

namespace strata::kernels::simd {

// expf for x <= 0, x clamped at -80 (as attention's reference exp_clamped): x = n ln2 + r with
// |r| <= ln2/2 (ln2 in two parts), exp(r) by Cephes' degree-6 polynomial (about 1 ulp),
// times 2^n (n >= -116, so the result stays a normal float).
template <class V>
inline typename V::F exp_clamped(typename V::F x) {
  x = V::max(V::set1(-80.0f), x);  // this order lets a NaN through (max returns its second operand)
  const auto n = V::round_nearest(V::mul(x, V::set1(1.44269504088896341f)));
  auto r = V::fma(n, V::set1(-0.693359375f), x);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  auto p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  const auto y = V::add(V::fma(p, V::mul(r, r), r), V::set1(1.0f));
  return V::times_pow2(y, n);
}

}  // namespace strata::kernels::simd
