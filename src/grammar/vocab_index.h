// What a grammar needs to know about a vocabulary, computed once per model and shared
// by every request: each token's bytes and a trie over them, so that the per-step mask
// walk tests a shared prefix of many tokens once (mask_builder.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::grammar {

class VocabIndex {
 public:
  // pieces[id]: the bytes token `id` stands for; an empty piece (control tokens, unknown)
  // is never allowed by a grammar. `eog`: end-of-generation ids, allowed exactly when the
  // grammar's sentence is complete.
  VocabIndex(std::vector<std::string> pieces, std::vector<int32_t> eog);

  // Trie node: children are nodes [first_child, first_child + n_children), sorted by
  // byte; the tokens whose piece ends here are tokens()[token_begin, + n_tokens).
  struct Node {
    uint32_t first_child = 0, n_children = 0;
    uint32_t token_begin = 0, n_tokens = 0;
    uint8_t byte = 0;
  };

  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  std::span<const int32_t> eog() const { return eog_; }
  bool is_eog(int32_t id) const;
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0] is the root
  std::span<const int32_t> tokens(const Node& n) const {
    return std::span<const int32_t>(tokens_).subspan(n.token_begin, n.n_tokens);
  }
  size_t max_piece_bytes() const { return max_piece_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  size_t max_piece_ = 0;
};

}  // namespace strata::grammar
