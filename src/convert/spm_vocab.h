// Writing a sentencepiece (SPM, `tokenizer.ggml.model = llama`) vocabulary into a GGUF
// the way llama.cpp's converters do: pieces, scores, token types, the <unk>=0, <s>=1,
// </s>=2 convention, BOS added and a space prefix. Shared by the llama2.c converter and
// the hand-built induction model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace strata {

// GGUF token types (tokenizer.ggml.token_type).
inline constexpr int32_t kTokenNormal = 1, kTokenUnknown = 2, kTokenControl = 3, kTokenByte = 6;

void write_spm_vocabulary(gguf::GgufWriter& w, std::vector<std::string> tokens,
                          std::vector<float> scores, std::vector<int32_t> types);

}  // namespace strata
