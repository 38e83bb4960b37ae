// The token loop of the tiled gemm kernels: tiles of 4 tokens, so a tile's activation
// rows stay in L1 while the weight rows (a panel the caller sized for L2) stream past,
// then one tile of the 1-3 tokens left. Included by kernel files of different
// instruction sets, so it has internal linkage.
#pragma once

#include <cstdint>

namespace strata::kernels {
namespace {

// fn.template operator()<T>(t) for each tile of T tokens starting at token t.
template <class Fn>
inline void for_token_tiles(int64_t n_tokens, Fn&& fn) {
  int64_t t = 0;
  for (; t + 4 <= n_tokens; t += 4) fn.template operator()<4>(t);
  switch (n_tokens - t) {
    case 3: fn.template operator()<3>(t); break;
    case 2: fn.template operator()<2>(t); break;
    case 1: fn.template operator()<1>(t); break;
    default: break;
  }
}

}  // namespace
}  // namespace strata::kernels
