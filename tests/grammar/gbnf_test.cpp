// The GBNF parser and the matcher, model-free: a toy vocabulary of single characters
// and a few multi-character tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "grammar/compiled.h"
#include "grammar/constraint.h"
#include "grammar/mask_builder.h"

namespace strata::grammar {
namespace {

std::shared_ptr<const VocabIndex> toy_vocab() {
  // id 0: end of generation; 1: a control token (empty piece); then characters and words.
  std::vector<std::string> pieces = {"",   "",  "a",  "b", "c", "ab",   "abc",  "{",        "}",
                                     "\"", "1", "12", "x", " ", "\xC3", "\xA9", "\xC3\xA9", "aaaa"};
  return std::make_shared<const VocabIndex>(std::move(pieces), std::vector<int32_t>{0});
}

bool matches(const std::string& grammar, const std::string& text) {
  auto g = compile_gbnf(grammar, toy_vocab());
  Matcher m(g);
  return m.advance_text(text, *std::make_unique<Stepper>(g->grammar())) && m.accepting();
}

TEST(Gbnf, LiteralsClassesAndRepetitions) {
  EXPECT_TRUE(matches("root ::= \"ab\" [c-d]", "abc"));
  EXPECT_FALSE(matches("root ::= \"ab\" [c-d]", "abe"));
  EXPECT_TRUE(matches("root ::= [^x]*", "abc"));
  EXPECT_FALSE(matches("root ::= [^x]*", "axc"));
  EXPECT_TRUE(matches("root ::= (\"a\" | \"b\")+ \"c\"?", "abba"));
  EXPECT_FALSE(matches("root ::= (\"a\" | \"b\")+", ""));
  EXPECT_TRUE(matches("root ::= \"a\"{2,3}", "aaa"));
  EXPECT_FALSE(matches("root ::= \"a\"{2,3}", "aaaa"));
  EXPECT_FALSE(matches("root ::= \"a\"{2,3}", "a"));
  EXPECT_TRUE(matches("root ::= \"a\"{2,}", "aaaaa"));
  EXPECT_TRUE(matches("root ::= x\nx ::= \"\\x41\" \"\\u00e9\"  # comment\n", "A\xC3\xA9"));
  EXPECT_TRUE(matches("root ::= .", "\xC3\xA9"));
}

TEST(Gbnf, RejectsBadGrammarsNamingTheProblem) {
  auto err = [](const std::string& g) {
    try {
      (void)parse_gbnf(g);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(err("x ::= \"a\"").find("no rule 'root'"), std::string::npos);
  EXPECT_NE(err("root ::= y").find("'y' is used but not defined"), std::string::npos);
  EXPECT_NE(err("root ::= root \"a\" | \"a\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= x \"a\"\nx ::= \"\" | root").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= \"a\"{5000}").find("repetition bound"), std::string::npos);
  EXPECT_NE(err(std::string(100, '(') + "\"a\"" + std::string(100, ')')).find("rule name"),
            std::string::npos);  // nested groups outside a rule: a parse error, not a crash
  EXPECT_NE(err("root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')'))
                .find("nested deeper"),
            std::string::npos);
  EXPECT_NE(err("root ::= \"abc").find("unterminated"), std::string::npos);
  GbnfLimits small;
  small.max_bytes = 10;
  EXPECT_THROW((void)parse_gbnf("root ::= \"aaaaaaaaaaaa\"", small), Error);
}

TEST(Matcher, MaskAllowsExactlyTheAcceptedTokens) {
  auto vocab = toy_vocab();
  auto g = compile_gbnf("root ::= \"a\" \"b\"? \"c\"", vocab);
  MaskBuilder masks(g);
  Matcher m(g);
  std::vector<uint8_t> allowed;
  masks.build(m, allowed);
  // From the start: "a", "ab", "abc"; not "aaaa", not end of generation.
  for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
    const std::string& p = vocab->piece(id);
    const bool want = p == "a" || p == "ab" || p == "abc";
    EXPECT_EQ(allowed[static_cast<size_t>(id)] != 0, want) << "token " << id;
    EXPECT_EQ(m.accepts(id), want) << "token " << id;
  }
  ASSERT_TRUE(m.advance(5));  // "ab"
  masks.build(m, allowed);
  EXPECT_TRUE(allowed[4]);   // "c"
  EXPECT_FALSE(allowed[0]);  // not complete yet
  ASSERT_TRUE(m.advance(4));
  masks.build(m, allowed);
  EXPECT_TRUE(allowed[0]);  // complete: only the end
  EXPECT_EQ(std::count(allowed.begin(), allowed.end(), 1), 1);
  EXPECT_FALSE(m.advance(2));  // rejected, state unchanged
  EXPECT_TRUE(m.accepting());
}

TEST(Matcher, CopiesRollBackAndPartialUtf8) {
  auto vocab = toy_vocab();
  auto g = compile_gbnf("root ::= \"\\u00e9\" \"x\"", vocab);
  Matcher m(g);
  Matcher copy = m;
  ASSERT_TRUE(copy.advance(14));  // the first byte of é
  EXPECT_FALSE(copy.accepting());
  EXPECT_FALSE(copy.accepts(12));  // "x" cannot come inside the character
  ASSERT_TRUE(copy.advance(15));   // its second byte
  EXPECT_TRUE(copy.advance(12));
  EXPECT_TRUE(copy.accepting());
  // The original is untouched: a rejected proposal costs nothing to roll back.
  EXPECT_FALSE(m.accepting());
  EXPECT_TRUE(m.accepts(16));
  EXPECT_FALSE(m.accepts(15));  // a lone continuation byte
}

TEST(Matcher, AmbiguityStaysBounded) {
  // (a|a|a|a)* style ambiguity is deduplicated; the state stays one stack per branch.
  auto g = compile_gbnf("root ::= (\"a\" | \"a\" | [a] | \"a\")*", toy_vocab());
  Matcher m(g);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(m.advance(17));
  EXPECT_LE(m.stacks().size(), 8u);
  EXPECT_TRUE(m.accepting());
}

}  // namespace
}  // namespace strata::grammar

namespace strata::grammar {
namespace {

TEST(Matcher, RejectsOverlongAndInvalidUtf8) {
  // F0 80 81 A1 is an overlong 'a'; E0 81 A1 too; ED A0 80 a surrogate.
  std::vector<std::string> pieces = {"",     "\xF0", "\x80", "\x81", "\xA1",
                                     "\xE0", "\xED", "\xA0", "a"};
  auto vocab = std::make_shared<const VocabIndex>(std::move(pieces), std::vector<int32_t>{0});
  auto g = compile_gbnf("root ::= [a] | [^a]", vocab);
  Matcher m(g);
  EXPECT_TRUE(m.accepts(8));
  EXPECT_FALSE(compile_gbnf("root ::= \"a\"", vocab) == nullptr);
  Matcher only_a(compile_gbnf("root ::= \"a\"", vocab));
  EXPECT_FALSE(only_a.accepts(1));  // no 4-byte character can be 'a'
  EXPECT_FALSE(only_a.accepts(5));
  Matcher any(g);
  ASSERT_TRUE(any.advance(1));
  EXPECT_FALSE(any.accepts(2));  // F0 80: overlong
  ASSERT_TRUE(Matcher(g).accepts(6));
  Matcher sur(g);
  ASSERT_TRUE(sur.advance(6));
  EXPECT_FALSE(sur.accepts(7));  // ED A0: a surrogate
}

}  // namespace
}  // namespace strata::grammar

namespace strata::grammar {
namespace {

TEST(Constraint, MasksItsOwnStateOrACopyAdvancedOverADraft) {
  std::vector<std::string> pieces = {"", "a", "b", "c"};
  auto vocab = std::make_shared<const VocabIndex>(std::move(pieces), std::vector<int32_t>{0});
  Constraint c(compile_gbnf("root ::= \"ab\" \"c\"?", vocab));
  std::vector<float> row(4, 0.0f);
  EXPECT_EQ(c.mask(row), 1);  // only "a"
  EXPECT_TRUE(std::isinf(row[2]));
  Matcher draft = c.state();
  ASSERT_TRUE(draft.advance(1, c.stepper()));
  std::fill(row.begin(), row.end(), 0.0f);
  EXPECT_EQ(c.mask(draft, row), 1);  // after the drafted "a": only "b"
  EXPECT_EQ(row[2], 0.0f);
  EXPECT_TRUE(std::isinf(row[1]));
  ASSERT_TRUE(draft.advance(2, c.stepper()));
  std::fill(row.begin(), row.end(), 0.0f);
  EXPECT_EQ(c.mask(draft, row), 2);     // complete or "c"
  EXPECT_FALSE(c.state().accepting());  // the constraint's own state never moved
}

}  // namespace
}  // namespace strata::grammar
