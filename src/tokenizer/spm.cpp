#include "tokenizer/spm.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace strata::tok {

namespace {

// A run of text that is currently one symbol, linked to its neighbours. A symbol
// absorbed into its left neighbour has length 0.
struct Symbol {
  uint32_t start;
  uint32_t length;
  int32_t prev;
  int32_t next;
  int32_t id;  // token of the merged text; -1 while unknown (unmerged characters)
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  int32_t id;     // token of the concatenation
  uint32_t size;  // bytes of the concatenation, to detect stale entries
};

// Heap order: the top is the highest score, the leftmost pair on equal scores.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  explicit SpmSession(const TokenizerImpl& t) : t_(t) {}

  // Encodes `text`; the buffers are reused from call to call.
  void run(std::string_view text, std::vector<int32_t>& out) {
    text_ = text;
    symbols_.clear();
    heap_.clear();
    split_characters();
    for (size_t i = 1; i < symbols_.size(); ++i) {
      try_add_bigram(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), BigramOrder{});
      const Bigram b = heap_.back();
      heap_.pop_back();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      // Symbols only grow, so a changed length means this pair no longer exists.
      if (left.length == 0 || right.length == 0 || left.length + right.length != b.size) continue;
      left.length += right.length;
      left.id = b.id;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      try_add_bigram(left.prev, b.left);
      try_add_bigram(b.left, left.next);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next)
      emit(symbols_[i], out);
  }

 private:
  void split_characters() {
    symbols_.reserve(text_.size());
    for (size_t pos = 0; pos < text_.size();) {
      const size_t len = utf8_char_length(text_, pos);
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), index - 1,
                          pos + len == text_.size() ? -1 : index + 1, -1});
      pos += len;
    }
  }

  void try_add_bigram(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const uint32_t size = l.length + symbols_[right].length;
    const int32_t id = t_.piece_ids.find(text_.substr(l.start, size));
    if (id < 0) return;
    heap_.push_back({t_.scores[id], left, right, id, size});
    std::push_heap(heap_.begin(), heap_.end(), BigramOrder{});
  }

  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const int32_t id = s.id >= 0 ? s.id : t_.piece_ids.find(text_.substr(s.start, s.length));
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    emit_bytes_or_unknown(t_, text_.substr(s.start, s.length), out);
  }

  const TokenizerImpl& t_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::vector<Bigram> heap_;  // max-heap in BigramOrder
};

// Where text can be cut into runs that merge independently: before a U+2581 that follows
// another character, when no piece has U+2581 after some other character (so no merge
// can cross such a cut). Sentencepiece vocabularies split by whitespace have this
// property, and it keeps the merge queue small.
size_t next_cut(std::string_view text, size_t from) {
  for (size_t p = text.find(kSpmSpace, from + 1); p != std::string_view::npos;
       p = text.find(kSpmSpace, p + 1)) {
    if (p < 3 || text.substr(p - 3, 3) != kSpmSpace) return p;
  }
  return text.size();
}

}  // namespace

void spm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  if (text.size() >= (uint64_t{1} << 31)) {
    throw Error("tokenizer: text of " + std::to_string(text.size()) +
                " bytes is too long to encode");
  }
  SpmSession session(t);
  if (!t.spm_cut_at_spaces) {
    session.run(text, out);
    return;
  }
  WordCache& cache = WordCache::for_tokenizer(t.id);
  for (size_t start = 0; start < text.size();) {
    const size_t end = next_cut(text, start);
    const std::string_view run = text.substr(start, end - start);
    start = end;
    if (cache.append(run, out)) continue;
    const size_t first = out.size();
    session.run(run, out);
    cache.store(run, std::span(out).subspan(first));
  }
}

bool spm_pieces_allow_cuts(const std::vector<std::string>& pieces) {
  for (const std::string& piece : pieces) {
    for (size_t p = piece.find(kSpmSpace, 1); p != std::string::npos;
         p = piece.find(kSpmSpace, p + 1)) {
      if (p < 3 || std::string_view(piece).substr(p - 3, 3) != kSpmSpace) return false;
    }
  }
  return true;
}

}  // namespace strata::tok
