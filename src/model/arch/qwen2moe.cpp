// Qwen1.5-MoE / Qwen2-MoE: qwen2 attention (NeoX RoPE, QKV biases), routed experts whose
// top-k softmax weights are not renormalised, and one shared expert scaled by
// sigmoid(ffn_gate_inp_shexp . x).
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& qwen2moe_arch() {
  static constexpr ArchSpec spec{
      "qwen2moe", RopeLayout::kNeox, true, false, ArchSpec::Experts::kRequired, false, true};
  return spec;
}

}  // namespace strata
