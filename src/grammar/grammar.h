// A context-free grammar over Unicode code points, in the flat form the matcher walks:
// every alternative of every rule is a run of elements in `elems` ending with kEnd, so a
// position in the grammar is one index. Built by parse_gbnf (gbnf_parser.h), which has
// already rejected undefined rules, left recursion and oversized input; immutable after.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::grammar {

// A set of code points: the union of inclusive ranges, or its complement.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;

  bool matches(uint32_t cp) const {
    bool in = false;
    for (const auto& [lo, hi] : ranges) in = in || (cp >= lo && cp <= hi);
    return in != negated;
  }
  // Whether some code point in [lo, hi] matches (for a partial UTF-8 sequence).
  bool matches_any(uint32_t lo, uint32_t hi) const;
};

struct Element {
  enum Kind : uint8_t { kEnd, kChars, kRule };
  Kind kind = kEnd;
  uint32_t value = 0;  // kChars: index into Grammar::classes; kRule: rule id
};

struct Grammar {
  std::vector<CharClass> classes;
  std::vector<Element> elems;               // every alternative, each ending with kEnd
  std::vector<std::vector<uint32_t>> alts;  // [rule] index in elems where each alternative starts
  std::vector<std::string> names;           // [rule] for error messages
  uint32_t root = 0;
};

}  // namespace strata::grammar
