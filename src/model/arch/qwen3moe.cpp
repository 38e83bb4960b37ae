// Qwen3-MoE (30B-A3B, 235B-A22B): qwen3 attention (NeoX RoPE, Q/K norms) and routed
// experts only, top-k softmax weights renormalised to sum 1.
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& qwen3moe_arch() {
  static constexpr ArchSpec spec{
      "qwen3moe", RopeLayout::kNeox, false, true, ArchSpec::Experts::kRequired, true};
  return spec;
}

}  // namespace strata
