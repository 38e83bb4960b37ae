// GBNF (llama.cpp's grammar format) to a Grammar:
//
//   root   ::= object
//   object ::= "{" pair ("," pair)* "}"      # literals with \n \t \" \\ \xHH \uHHHH escapes
//   digit  ::= [0-9] | [^a-z\x00]            # classes, negated classes, "." for any
//   name   ::= [a-z]{1,8} ws? (x | y)+       # groups, * + ? {m} {m,} {m,n}
//
// The input is hostile: its size, the number of rules and elements, the nesting of
// groups and the repetition bounds are checked against GbnfLimits, and a grammar whose
// matching could loop (a rule reachable from itself without consuming a character: left
// recursion) or that names an undefined rule is rejected. Errors are strata::Error
// naming the rule and the offset.
#pragma once

#include <cstdint>
#include <string_view>

#include "grammar/grammar.h"

namespace strata::grammar {

struct GbnfLimits {
  size_t max_bytes = 256 * 1024;  // source text
  size_t max_rules = 20000;       // including the rules repetitions expand into
  size_t max_elements = 400000;   // flat elements after expansion
  int32_t max_group_depth = 64;   // nested ( ... )
  int32_t max_repetition = 1000;  // m and n in {m,n}
};

Grammar parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace strata::grammar
