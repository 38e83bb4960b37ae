// A scalar reference forward pass, written from the papers and the GGUF tensor layout
// and kept as plain as possible: every weight dequantized to f32 by the reference
// kernels, one sequence, full K/V arrays, no paging, no batching. MoE routes with a
// sort; MLA runs decompressed (per-head K = [W_kb^T c_kv, k_pe], V = W_vb c_kv), so a
// match with the engine's absorbed form also checks the absorption.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::testing {

// Teacher-forced logits of `tokens` (positions 0..n-1): [n][n_vocab].
std::vector<std::vector<float>> reference_logits(const std::string& gguf_path,
                                                 const std::vector<int32_t>& tokens);

}  // namespace strata::testing
