#include "grammar/gbnf_parser.h"

#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/utf8.h"

namespace strata::grammar {
namespace {

using Seq = std::vector<Element>;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  Parser(std::string_view src, const GbnfLimits& limits) : src_(src), limits_(limits) {}

  Grammar parse() {
    if (src_.size() > limits_.max_bytes) {
      throw Error("grammar: " + std::to_string(src_.size()) + " bytes exceed the limit of " +
                  std::to_string(limits_.max_bytes));
    }
    skip_space(true);
    while (pos_ < src_.size()) {
      parse_rule();
      skip_space(true);
    }
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("grammar: " + what + " at offset " + std::to_string(pos_));
  }

  char peek() const { return pos_ < src_.size() ? src_[pos_] : '\0'; }
  bool eof() const { return pos_ >= src_.size(); }

  // Spaces, tabs and comments; newlines too where a rule may continue (inside groups and
  // after `::=` or `|`).
  void skip_space(bool newlines) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(src_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name) {
    const auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    return add_rule(name);
  }

  uint32_t add_rule(const std::string& name) {
    if (rules_.size() >= limits_.max_rules)
      fail("more than " + std::to_string(limits_.max_rules) + " rules");
    const auto id = static_cast<uint32_t>(rules_.size());
    ids_.emplace(name, id);
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    return id;
  }

  // A rule the parser makes for a group or a repetition.
  uint32_t generated_rule(const std::string& base, std::vector<Seq> alts) {
    std::string name;
    do {
      name = base + "-" + std::to_string(++n_generated_);
    } while (ids_.count(name));
    const uint32_t id = add_rule(name);
    for (const Seq& s : alts) count_elements(s.size() + 1);
    rules_[id] = std::move(alts);
    defined_[id] = true;
    return id;
  }

  void count_elements(size_t n) {
    n_elements_ += n;
    if (n_elements_ > limits_.max_elements)
      fail("more than " + std::to_string(limits_.max_elements) + " elements after expansion");
  }

  void parse_rule() {
    const std::string name = parse_name();
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") fail("expected '::=' after rule '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (defined_[id]) fail("rule '" + name + "' is defined twice");
    std::vector<Seq> alts = parse_alternatives(name, 0);
    for (const Seq& s : alts) count_elements(s.size() + 1);
    rules_[id] = std::move(alts);
    defined_[id] = true;
    skip_space(false);
    if (!eof() && peek() != '\n' && peek() != '\r') fail("expected the end of rule '" + name + "'");
  }

  std::vector<Seq> parse_alternatives(const std::string& rule, int32_t depth) {
    if (depth > limits_.max_group_depth)
      fail("groups nested deeper than " + std::to_string(limits_.max_group_depth));
    std::vector<Seq> alts;
    alts.push_back(parse_sequence(rule, depth));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, depth));
    }
    return alts;
  }

  Seq parse_sequence(const std::string& rule, int32_t depth) {
    Seq seq;
    size_t atom_start = 0;
    bool have_atom = false;
    while (!eof()) {
      const char c = peek();
      if (c == '"') {
        atom_start = seq.size();
        ++pos_;
        while (peek() != '"') {
          if (eof()) fail("unterminated string literal in rule '" + rule + "'");
          const uint32_t cp = parse_char();
          seq.push_back(chars({{cp, cp}}, false));
        }
        ++pos_;
        have_atom = seq.size() > atom_start;
      } else if (c == '[') {
        atom_start = seq.size();
        seq.push_back(parse_class(rule));
        have_atom = true;
      } else if (c == '.') {
        ++pos_;
        atom_start = seq.size();
        seq.push_back(chars({}, true));
        have_atom = true;
      } else if (is_name_char(c)) {
        atom_start = seq.size();
        seq.push_back({Element::kRule, rule_id(parse_name())});
        have_atom = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        std::vector<Seq> alts = parse_alternatives(rule, depth + 1);
        if (peek() != ')') fail("expected ')' in rule '" + rule + "'");
        ++pos_;
        atom_start = seq.size();
        seq.push_back({Element::kRule, generated_rule(rule, std::move(alts))});
        have_atom = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_atom) fail("a repetition without anything before it in rule '" + rule + "'");
        repeat(rule, seq, atom_start);
      } else {
        break;
      }
      skip_space(depth > 0);
    }
    return seq;
  }

  Element chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
    classes_.push_back({std::move(ranges), negated});
    return {Element::kChars, static_cast<uint32_t>(classes_.size() - 1)};
  }

  // One character of a literal or class: an escape or one UTF-8 sequence.
  uint32_t parse_char() {
    if (peek() == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '/':
        case '^':
          return e;
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    const size_t len = utf8_valid_length(src_, pos_);
    if (len == 0) fail("invalid UTF-8");
    const uint32_t cp = utf8_decode(src_, pos_, len);
    pos_ += len;
    return cp;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > 0x10FFFF) fail("code point above U+10FFFF");
    return v;
  }

  Element parse_class(const std::string& rule) {
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (peek() != ']') {
      if (eof()) fail("unterminated character class in rule '" + rule + "'");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range out of order in rule '" + rule + "'");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    return chars(std::move(ranges), negated);
  }

  int32_t parse_int() {
    int64_t v = 0;
    const size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > limits_.max_repetition)
        fail("repetition bound above " + std::to_string(limits_.max_repetition));
      ++pos_;
    }
    if (pos_ == start) fail("expected a number in a repetition");
    return static_cast<int32_t>(v);
  }

  // Applies the postfix operator at pos_ to seq[atom_start..].
  void repeat(const std::string& rule, Seq& seq, size_t atom_start) {
    Seq atom(seq.begin() + static_cast<ptrdiff_t>(atom_start), seq.end());
    seq.resize(atom_start);
    const Element sub =
        atom.size() == 1 ? atom[0] : Element{Element::kRule, generated_rule(rule, {atom})};
    const char op = peek();
    ++pos_;
    int32_t min = 0, max = -1;  // -1: unbounded
    if (op == '+') {
      min = 1;
    } else if (op == '?') {
      max = 1;
    } else if (op == '{') {
      skip_space(false);
      min = parse_int();
      skip_space(false);
      max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        max = peek() == '}' ? -1 : parse_int();
        skip_space(false);
      }
      if (peek() != '}') fail("expected '}' in rule '" + rule + "'");
      ++pos_;
      if (max >= 0 && max < min) fail("repetition {m,n} with n < m in rule '" + rule + "'");
    }
    count_elements(static_cast<size_t>(min));
    for (int32_t i = 0; i < min; ++i) seq.push_back(sub);
    if (max < 0) {
      // star ::= sub star | (empty)
      const uint32_t star = generated_rule(rule, {{}, {}});
      rules_[star][0] = {sub, {Element::kRule, star}};
      seq.push_back({Element::kRule, star});
    } else if (max > min) {
      // opt_k ::= sub opt_(k-1) | (empty), nested so that at most max - min follow.
      uint32_t opt = generated_rule(rule, {{sub}, {}});
      for (int32_t k = 1; k < max - min; ++k) {
        opt = generated_rule(rule, {{sub, {Element::kRule, opt}}, {}});
      }
      seq.push_back({Element::kRule, opt});
    }
  }

  Grammar finish() {
    const auto root = ids_.find("root");
    if (root == ids_.end() || !defined_[root->second]) throw Error("grammar: no rule 'root'");
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) throw Error("grammar: rule '" + names_[r] + "' is used but not defined");
    }
    Grammar g;
    g.classes = std::move(classes_);
    g.names = std::move(names_);
    g.root = root->second;
    g.alts.resize(rules_.size());
    g.elems.reserve(n_elements_);
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Seq& s : rules_[r]) {
        g.alts[r].push_back(static_cast<uint32_t>(g.elems.size()));
        g.elems.insert(g.elems.end(), s.begin(), s.end());
        g.elems.push_back({Element::kEnd, 0});
      }
    }
    check_left_recursion(g);
    return g;
  }

  // Rejects a rule that can reach itself before consuming a character: the matcher's
  // expansion of it would never end.
  static void check_left_recursion(const Grammar& g) {
    const size_t n = g.alts.size();
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (uint32_t a : g.alts[r]) {
          uint32_t p = a;
          while (g.elems[p].kind == Element::kRule && nullable[g.elems[p].value]) ++p;
          if (g.elems[p].kind == Element::kEnd) {
            nullable[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    std::vector<std::vector<uint32_t>> left(n);  // rules reachable at the left edge
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t a : g.alts[r]) {
        for (uint32_t p = a; g.elems[p].kind == Element::kRule; ++p) {
          left[r].push_back(g.elems[p].value);
          if (!nullable[g.elems[p].value]) break;
        }
      }
    }
    // Iterative depth-first search for a cycle (0 new, 1 on the path, 2 done).
    std::vector<char> color(n, 0);
    std::vector<std::pair<uint32_t, size_t>> path;
    for (size_t s = 0; s < n; ++s) {
      if (color[s]) continue;
      path.push_back({static_cast<uint32_t>(s), 0});
      color[s] = 1;
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == left[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t to = left[r][next++];
        if (color[to] == 1) {
          throw Error("grammar: rule '" + g.names[to] +
                      "' is left-recursive (it can reach itself without consuming a character)");
        }
        if (color[to] == 0) {
          color[to] = 1;
          path.push_back({to, 0});
        }
      }
    }
  }

  std::string_view src_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<std::vector<Seq>> rules_;
  std::vector<bool> defined_;
  std::vector<CharClass> classes_;
  size_t n_elements_ = 0;
  int32_t n_generated_ = 0;
};

}  // namespace

bool CharClass::matches_any(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && b >= lo) return true;
    }
    return false;
  }
  // Some point of [lo, hi] outside every range: walk up from lo past covering ranges.
  uint32_t p = lo;
  for (bool moved = true; moved && p <= hi;) {
    moved = false;
    for (const auto& [a, b] : ranges) {
      if (p >= a && p <= b) {
        if (b >= hi) return false;
        p = b + 1;
        moved = true;
      }
    }
  }
  return p <= hi;
}

Grammar parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  return Parser(text, limits).parse();
}

}  // namespace strata::grammar
