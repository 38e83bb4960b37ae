// Sentencepiece-style BPE over UTF-8 characters (llama.cpp's llm_tokenizer_spm).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tok {

struct TokenizerImpl;

// Appends the tokens of `text` to `out`. `text` is already normalized: spaces replaced by
// U+2581 and the dummy-prefix space added. Each character starts as one symbol; the
// adjacent pair whose concatenation is the highest-scoring piece is merged (leftmost on
// ties) until no pair is a piece. Symbols that are no piece become <0xNN> byte tokens.
void spm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out);

// True when no piece has U+2581 right after another character. Then no merge crosses
// the start of a U+2581 that follows another character, and spm_encode may work on the
// runs between such places one at a time.
bool spm_pieces_allow_cuts(const std::vector<std::string>& pieces);

}  // namespace strata::tok
