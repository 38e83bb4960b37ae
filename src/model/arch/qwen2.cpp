// Qwen2 / Qwen2.5: NeoX-style RoPE (rotate halves) and biases on the Q, K, V projections.
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& qwen2_arch() {
  static constexpr ArchSpec spec{"qwen2", RopeLayout::kNeox, true, false};
  return spec;
}

}  // namespace strata
