#include "kv/head_modes.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace strata {

int64_t HeadModes::n_streaming() const {
  return std::count(streaming.begin(), streaming.end(), uint8_t{1});
}

int64_t HeadModes::n_streaming_in_layer(int64_t layer) const {
  if (streaming.empty()) return 0;
  const auto first = streaming.begin() + layer * n_kv_heads;
  return std::count(first, first + n_kv_heads, uint8_t{1});
}

std::string HeadModes::describe() const {
  if (dense()) return "dense";
  std::string s = "sink " + std::to_string(sink) + ", window " + std::to_string(window) + ", " +
                  std::to_string(n_full()) + "/" + std::to_string(n_layers * n_kv_heads) +
                  " KV heads full:";
  for (int64_t l = 0; l < n_layers; ++l) {
    s += l == 0 ? " " : " | ";
    for (int64_t h = 0; h < n_kv_heads; ++h) s += is_streaming(l, h) ? 'S' : 'F';
  }
  return s;
}

}  // namespace strata
