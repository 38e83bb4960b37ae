// Byte-level BPE merges (llama.cpp's llm_tokenizer_bpe, GPT-2 style).
//
// Merges work on ids rather than strings: every string that occurs in a merge gets an
// id (its token id, or a "synthetic" id >= n_vocab when the vocabulary lacks it), and
// each merge becomes (left id, right id) -> (rank, merged id). A word is merged with a
// priority queue, lowest rank first and leftmost on ties, exactly like merging the
// strings would.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_map.h"

namespace strata::tok {

struct TokenizerImpl;

class BpeMerges {
 public:
  // `pieces` maps token text to id for a vocabulary of n_vocab tokens; merges are
  // "left right" strings, highest priority first. Throws strata::Error naming
  // tokenizer.ggml.merges[i] for a malformed entry.
  void build(const StringMap& pieces, int32_t n_vocab, const std::vector<std::string>& merges);

  PairMap::Entry find(int32_t left, int32_t right) const { return pairs_.find(left, right); }
  // Symbol id of raw byte b (its GPT-2 code point as a token or synthetic id), or -1.
  int32_t byte_symbol(unsigned char b) const { return byte_symbols_[b]; }
  int32_t n_vocab() const { return n_vocab_; }
  size_t size() const { return pairs_.size(); }

 private:
  int32_t intern(const StringMap& pieces, std::string_view text);

  int32_t n_vocab_ = 0;
  PairMap pairs_;
  StringMap synthetic_;  // strings in merges that are not tokens -> id - n_vocab
  std::array<int32_t, 256> byte_symbols_{};
};

// Buffers reused across the words of one encode() call, so that merging a word does not
// allocate once they have grown.
struct BpeScratch {
  struct Symbol {
    uint32_t start;   // byte offset in the word
    uint32_t length;  // bytes; 0 once merged into the left neighbour
    int32_t prev, next;
    int32_t id;  // token or synthetic id, -1 when the text is in no merge and no token
  };
  struct Bigram {
    int32_t rank;
    int32_t left, right;
    int32_t id;     // id of the merged text
    uint32_t size;  // bytes of the merged text, to detect stale entries
  };
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  std::string mapped;  // the word in GPT-2 code points (ignore_merges lookups)
};

// Appends the tokens of one pre-tokenized word (raw bytes, before the GPT-2 byte
// mapping) to `out`. With ignore_merges, a word that is itself a token is emitted whole
// (llama3-style vocabularies).
void bpe_encode_word(const TokenizerImpl& t, std::string_view word, bool ignore_merges,
                     BpeScratch& scratch, std::vector<int32_t>& out);

}  // namespace strata::tok
