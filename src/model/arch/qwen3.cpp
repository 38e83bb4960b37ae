// Qwen3 (dense): NeoX-style RoPE, no QKV biases, per-head RMSNorm on Q and K.
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& qwen3_arch() {
  static constexpr ArchSpec spec{"qwen3", RopeLayout::kNeox, false, true};
  return spec;
}

}  // namespace strata
