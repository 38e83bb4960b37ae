// DeepSeek-V2/V2.5/V3 (and V2-Lite): multi-latent attention (model/mla_attention.h) with
// interleaved RoPE on the decoupled rope dims, leading dense FFN layers, then routed
// plus shared experts. Weight normalisation and gating come from the file's metadata.
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& deepseek2_arch() {
  static constexpr ArchSpec spec{"deepseek2",
                                 RopeLayout::kInterleaved,
                                 false,
                                 false,
                                 ArchSpec::Experts::kRequired,
                                 false,
                                 false,
                                 true};
  return spec;
}

}  // namespace strata
