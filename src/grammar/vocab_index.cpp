#include "grammar/vocab_index.h"

#include <algorithm>
#include <numeric>

namespace strata::grammar {

VocabIndex::VocabIndex(std::vector<std::string> pieces, std::vector<int32_t> eog)
    : pieces_(std::move(pieces)), eog_(std::move(eog)) {
  // Tokens sorted by piece: every trie node's subtree is then a contiguous run, and the
  // nodes can be laid out breadth-first with each node's children next to each other.
  std::vector<int32_t> order(pieces_.size());
  std::iota(order.begin(), order.end(), 0);
  std::erase_if(order, [&](int32_t id) { return pieces_[static_cast<size_t>(id)].empty(); });
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
  });
  for (int32_t id : order)
    max_piece_ = std::max(max_piece_, pieces_[static_cast<size_t>(id)].size());
  tokens_.reserve(order.size());
  // A node stands for the run order[lo, hi) sharing `depth` leading bytes.
  struct Pending {
    uint32_t node;
    size_t lo, hi, depth;
  };
  nodes_.push_back({});
  std::vector<Pending> queue{{0, 0, order.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    size_t i = p.lo;
    nodes_[p.node].token_begin = static_cast<uint32_t>(tokens_.size());
    while (i < p.hi && pieces_[static_cast<size_t>(order[i])].size() == p.depth) {
      tokens_.push_back(order[i++]);
    }
    nodes_[p.node].n_tokens = static_cast<uint32_t>(tokens_.size()) - nodes_[p.node].token_begin;
    nodes_[p.node].first_child = static_cast<uint32_t>(nodes_.size());
    while (i < p.hi) {
      const auto byte = static_cast<uint8_t>(pieces_[static_cast<size_t>(order[i])][p.depth]);
      size_t j = i;
      while (j < p.hi &&
             static_cast<uint8_t>(pieces_[static_cast<size_t>(order[j])][p.depth]) == byte)
        ++j;
      Node child;
      child.byte = byte;
      nodes_.push_back(child);
      queue.push_back({static_cast<uint32_t>(nodes_.size() - 1), i, j, p.depth + 1});
      i = j;
    }
    nodes_[p.node].n_children = static_cast<uint32_t>(nodes_.size()) - nodes_[p.node].first_child;
  }
}

bool VocabIndex::is_eog(int32_t id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

}  // namespace strata::grammar
