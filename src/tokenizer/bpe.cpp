#include "tokenizer/bpe.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace strata::tok {

int32_t BpeMerges::intern(const StringMap& pieces, std::string_view text) {
  const int32_t id = pieces.find(text);
  if (id >= 0) return id;
  const int32_t next = static_cast<int32_t>(synthetic_.size());
  synthetic_.insert(text, next);  // keeps the existing value when already present
  return n_vocab_ + synthetic_.find(text);
}

void BpeMerges::build(const StringMap& pieces, int32_t n_vocab,
                      const std::vector<std::string>& merges) {
  n_vocab_ = n_vocab;
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& merge = merges[i];
    // As in llama.cpp the separator is the first space after the first byte, so a left
    // side may itself start with a space.
    const size_t sep = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (sep == std::string::npos || sep + 1 >= merge.size()) {
      throw Error("tokenizer.ggml.merges[" + std::to_string(i) +
                  "]: expected \"left right\", got " + quote_for_error(merge));
    }
    const std::string_view left(merge.data(), sep);
    const std::string_view right(merge.data() + sep + 1, merge.size() - sep - 1);
    joined.assign(left).append(right);
    const int32_t left_id = intern(pieces, left);
    const int32_t right_id = intern(pieces, right);
    const int32_t joined_id = intern(pieces, joined);
    // The first (highest-priority) occurrence of a pair wins, as in llama.cpp.
    pairs_.insert(left_id, right_id, {static_cast<int32_t>(i), joined_id});
  }
  const auto& alphabet = byte_alphabet();
  for (int b = 0; b < 256; ++b) {
    const std::string& text = alphabet.byte_to_utf8[b];
    const int32_t id = pieces.find(text);
    const int32_t synthetic = synthetic_.find(text);
    byte_symbols_[b] = id >= 0 ? id : (synthetic >= 0 ? n_vocab_ + synthetic : -1);
  }
}

namespace {

using Symbol = BpeScratch::Symbol;
using Bigram = BpeScratch::Bigram;

// Heap order: the top is the lowest rank, leftmost on ties.
bool lower_priority(const Bigram& a, const Bigram& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

void try_add_bigram(const BpeMerges& merges, BpeScratch& s, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  const Symbol& l = s.symbols[left];
  const Symbol& r = s.symbols[right];
  if (l.id < 0 || r.id < 0) return;
  const PairMap::Entry e = merges.find(l.id, r.id);
  if (e.rank < 0) return;
  s.heap.push_back({e.rank, left, right, e.result, l.length + r.length});
  std::push_heap(s.heap.begin(), s.heap.end(), lower_priority);
}

// Emits the final symbol: its token, or (when the merged text is no token) its bytes.
void emit_symbol(const TokenizerImpl& t, std::string_view word, const Symbol& sym,
                 std::vector<int32_t>& out) {
  if (sym.id >= 0 && sym.id < t.n_vocab()) {
    out.push_back(sym.id);
    return;
  }
  emit_bytes_or_unknown(t, word.substr(sym.start, sym.length), out);
}

}  // namespace

void bpe_encode_word(const TokenizerImpl& t, std::string_view word, bool ignore_merges,
                     BpeScratch& s, std::vector<int32_t>& out) {
  if (word.empty()) return;
  const BpeMerges& merges = t.merges;
  if (ignore_merges) {
    const auto& alphabet = byte_alphabet();
    s.mapped.clear();
    for (char c : word) s.mapped += alphabet.byte_to_utf8[static_cast<unsigned char>(c)];
    const int32_t id = t.piece_ids.find(s.mapped);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const auto n = static_cast<int32_t>(word.size());
  s.symbols.clear();
  for (int32_t i = 0; i < n; ++i) {
    s.symbols.push_back({static_cast<uint32_t>(i), 1, i - 1, i + 1 == n ? -1 : i + 1,
                         merges.byte_symbol(static_cast<unsigned char>(word[i]))});
  }
  s.heap.clear();
  for (int32_t i = 1; i < n; ++i) try_add_bigram(merges, s, i - 1, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), lower_priority);
    const Bigram b = s.heap.back();
    s.heap.pop_back();
    Symbol& left = s.symbols[b.left];
    Symbol& right = s.symbols[b.right];
    // Symbols only grow, so a changed length means this pair no longer exists.
    if (left.length == 0 || right.length == 0 || left.length + right.length != b.size) continue;
    left.length += right.length;
    left.id = b.id;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = b.left;
    try_add_bigram(merges, s, left.prev, b.left);
    try_add_bigram(merges, s, b.left, left.next);
  }
  for (int32_t i = 0; i != -1; i = s.symbols[i].next) emit_symbol(t, word, s.symbols[i], out);
}

}  // namespace strata::tok
