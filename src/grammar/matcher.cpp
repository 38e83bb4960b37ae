#include "grammar/matcher.h"

#include <algorithm>

#include "core/error.h"
#include "grammar/compiled.h"

namespace strata::grammar {
namespace {

uint64_t hash_stack(std::span<const uint32_t> s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  for (uint32_t v : s) h = (h ^ v) * 0x100000001B3ull + (h >> 29);
  return h;
}

}  // namespace

void Stepper::expand(std::span<const uint32_t> s, StackSet& out) {
  // An explicit work list instead of recursion: a chain of thousands of nullable rules
  // must not exhaust the thread's stack. The grammar has no left recursion, so this ends;
  // kMaxExpansions bounds ambiguous grammars whose expansions multiply.
  work_.clear();
  work_.add(s);
  size_t steps = 0;
  while (!work_.empty()) {
    const auto top = work_.stack(work_.size() - 1);
    tmp_.assign(top.begin(), top.end());
    work_.pop_last();
    if (++steps > kMaxExpansions) break;
    if (tmp_.empty() || g_.elems[tmp_.back()].kind == Element::kChars) {
      if (out.size() < kMaxStacks) out.add(tmp_);
      continue;
    }
    // A rule reference: replace it by its continuation, then each alternative on top.
    const uint32_t pos = tmp_.back();
    const uint32_t rule = g_.elems[pos].value;
    tmp_.pop_back();
    if (g_.elems[pos + 1].kind != Element::kEnd) tmp_.push_back(pos + 1);
    if (tmp_.size() >= kMaxDepth) continue;  // nested deeper than the budget: dropped
    const auto& alts = g_.alts[rule];
    for (size_t a = alts.size(); a-- > 0;) {  // reversed: the first alternative is expanded first
      work_.add(tmp_);
      if (g_.elems[alts[a]].kind != Element::kEnd) {
        work_.data.push_back(alts[a]);
        ++work_.ends.back();
      }
    }
  }
}

void Stepper::dedupe(StackSet& s) {
  if (s.size() < 2) return;
  if (s.size() <= 8) {
    // Few stacks (the usual case): compare pairwise, no hashing or sorting.
    bool any = false;
    for (size_t i = 1; i < s.size() && !any; ++i) {
      for (size_t j = 0; j < i && !any; ++j) {
        const auto a = s.stack(i), b = s.stack(j);
        any = std::equal(a.begin(), a.end(), b.begin(), b.end());
      }
    }
    if (!any) return;
  }
  hashes_.clear();
  for (size_t k = 0; k < s.size(); ++k)
    hashes_.emplace_back(hash_stack(s.stack(k)), static_cast<uint32_t>(k));
  std::sort(hashes_.begin(), hashes_.end());
  unique_.clear();
  for (size_t i = 0; i < hashes_.size(); ++i) {
    const auto cur = s.stack(hashes_[i].second);
    bool dup = false;
    for (size_t j = i; j-- > 0 && hashes_[j].first == hashes_[i].first;) {
      const auto prev = s.stack(hashes_[j].second);
      if (std::equal(cur.begin(), cur.end(), prev.begin(), prev.end())) {
        dup = true;
        break;
      }
    }
    if (!dup) unique_.add(cur);
  }
  if (unique_.size() != s.size()) std::swap(s, unique_);
}

void Stepper::accept_char(const StackSet& in, uint32_t cp, StackSet& out) {
  out.clear();
  for (size_t k = 0; k < in.size(); ++k) {
    const auto s = in.stack(k);
    if (s.empty()) continue;
    const Element& e = g_.elems[s.back()];
    if (e.kind != Element::kChars || !g_.classes[e.value].matches(cp)) continue;
    // The character is consumed: the stack goes on after it. The common case, another
    // character next in the same alternative, needs no expansion (the mask walk's hot path).
    const uint32_t next = s.back() + 1;
    if (g_.elems[next].kind == Element::kChars) {
      if (out.size() < kMaxStacks) {
        out.add(s);
        out.data.back() = next;
      }
      continue;
    }
    advanced_.assign(s.begin(), s.end());
    if (g_.elems[next].kind == Element::kEnd) {
      advanced_.pop_back();
    } else {
      advanced_.back() = next;
    }
    if (advanced_.empty() || g_.elems[advanced_.back()].kind == Element::kChars) {
      if (out.size() < kMaxStacks) out.add(advanced_);
      continue;
    }
    expand(advanced_, out);
  }
  dedupe(out);
}

bool Stepper::partial_viable(const StackSet& s, const Partial& p) const {
  const int shift = 6 * p.remaining;
  // The code points the bytes so far can still become: no overlong form, none above
  // U+10FFFF.
  static constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
  const uint32_t lo = std::max(p.value << shift, kMinOfLength[std::clamp(p.length, 0, 4)]);
  const uint32_t hi = std::min((p.value << shift) | ((1u << shift) - 1), 0x10FFFFu);
  if (lo > hi) return false;
  for (size_t k = 0; k < s.size(); ++k) {
    const auto st = s.stack(k);
    if (st.empty()) continue;
    const Element& e = g_.elems[st.back()];
    if (e.kind == Element::kChars && g_.classes[e.value].matches_any(lo, hi)) return true;
  }
  return false;
}

bool Stepper::accept_byte(const StackSet& in, const Partial& p, uint8_t b, StackSet& out,
                          Partial& po) {
  if (p.remaining == 0) {
    if (b < 0x80) {
      accept_char(in, b, out);
      po = {};
      return !out.empty();
    }
    if ((b & 0xE0) == 0xC0 && b >= 0xC2) {
      po = {b & 0x1Fu, 1, 2};
    } else if ((b & 0xF0) == 0xE0) {
      po = {b & 0x0Fu, 2, 3};
    } else if ((b & 0xF8) == 0xF0 && b <= 0xF4) {
      po = {b & 0x07u, 3, 4};
    } else {
      return false;  // a continuation byte or an invalid lead
    }
  } else {
    if ((b & 0xC0) != 0x80) return false;
    // The first continuation byte decides overlong forms (E0 80.., F0 80..), surrogates
    // (ED A0..) and values above U+10FFFF (F4 90..): RFC 3629's table.
    if (p.remaining == p.length - 1) {
      const uint32_t v = (p.value << 6) | (b & 0x3Fu);
      if ((p.length == 3 && (v < 0x20 || (v >= 0x360 && v < 0x380))) ||
          (p.length == 4 && (v < 0x10 || v >= 0x110)))
        return false;
    }
    po = {(p.value << 6) | (b & 0x3Fu), p.remaining - 1, p.length};
    if (po.remaining == 0) {
      if (po.value > 0x10FFFF || (po.value >= 0xD800 && po.value <= 0xDFFF)) return false;
      accept_char(in, po.value, out);
      po = {};
      return !out.empty();
    }
  }
  // Still inside a character: the stacks wait for its last byte.
  if (!partial_viable(in, po)) return false;
  if (&out != &in) out = in;
  return true;
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), stacks_(grammar_->initial()) {}

bool Matcher::accepting() const {
  if (partial_.remaining) return false;
  for (size_t k = 0; k < stacks_.size(); ++k) {
    if (stacks_.stack(k).empty()) return true;
  }
  return false;
}

bool Matcher::run_bytes(std::string_view bytes, Stepper& stepper, StackSet& out,
                        Partial& partial) const {
  StackSet a = stacks_, b;
  Partial p = partial_;
  for (char c : bytes) {
    Partial q;
    if (!stepper.accept_byte(a, p, static_cast<uint8_t>(c), b, q)) return false;
    std::swap(a, b);
    p = q;
  }
  out = std::move(a);
  partial = p;
  return true;
}

bool Matcher::accepts(int32_t token, Stepper& stepper) const {
  const VocabIndex& v = grammar_->vocab();
  if (token < 0 || token >= v.n_vocab()) return false;
  if (v.is_eog(token)) return accepting();
  const std::string& piece = v.piece(token);
  if (piece.empty()) return false;
  StackSet out;
  Partial p;
  return run_bytes(piece, stepper, out, p);
}

bool Matcher::accepts(int32_t token) const {
  Stepper stepper(grammar_->grammar());
  return accepts(token, stepper);
}

bool Matcher::advance(int32_t token, Stepper& stepper) {
  const VocabIndex& v = grammar_->vocab();
  if (token < 0 || token >= v.n_vocab()) return false;
  if (v.is_eog(token)) return accepting();
  const std::string& piece = v.piece(token);
  if (piece.empty()) return false;
  return advance_text(piece, stepper);
}

bool Matcher::advance(int32_t token) {
  Stepper stepper(grammar_->grammar());
  return advance(token, stepper);
}

bool Matcher::advance_text(std::string_view bytes, Stepper& stepper) {
  Partial p;
  if (!run_bytes(bytes, stepper, next_, p)) return false;
  std::swap(stacks_, next_);
  partial_ = p;
  return true;
}

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const VocabIndex> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), masks_(vocab_->n_vocab()) {
  Stepper stepper(grammar_);
  // The initial stacks: each alternative of the root rule, expanded.
  for (uint32_t a : grammar_.alts[grammar_.root]) {
    if (grammar_.elems[a].kind == Element::kEnd) {
      initial_.add({});
    } else {
      const uint32_t s[] = {a};
      stepper.expand(s, initial_);
    }
  }
  stepper.dedupe(initial_);
  if (initial_.empty()) throw Error("grammar: the root rule matches nothing");
}

std::shared_ptr<const CompiledGrammar> compile_gbnf(std::string_view text,
                                                    std::shared_ptr<const VocabIndex> vocab,
                                                    const GbnfLimits& limits) {
  return std::make_shared<const CompiledGrammar>(parse_gbnf(text, limits), std::move(vocab));
}

}  // namespace strata::grammar
