// Llama 2/3/3.x, Mistral, TinyLlama, SmolLM: GGUF converters permute Q/K so that RoPE
// rotates interleaved pairs; no biases; Llama-3 frequency scaling arrives as the
// `rope_freqs.weight` tensor. Mixtral is a llama file with expert_count and
// ffn_{gate_inp,gate_exps,up_exps,down_exps}; its top-k softmax weights are renormalised.
#include "model/arch/arch.h"

namespace strata {

const ArchSpec& llama_arch() {
  static constexpr ArchSpec spec{"llama", RopeLayout::kInterleaved,     false,
                                 false,   ArchSpec::Experts::kOptional, true};
  return spec;
}

}  // namespace strata
