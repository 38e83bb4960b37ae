// Splitting on special-token texts: parse_special, user-defined tokens, priority of
// longer tokens, and the sentencepiece space after a special token.
#include "tokenizer/special_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using Ids = std::vector<int32_t>;

struct Piece {
  int32_t token;
  std::string text;
};

std::vector<Piece> split(const tok::SpecialMatcher& m, const std::string& text,
                         bool parse_special) {
  std::vector<tok::Fragment> fragments;
  m.split(text, parse_special, fragments);
  std::vector<Piece> out;
  for (const auto& f : fragments)
    out.push_back({f.token, f.token >= 0 ? "" : text.substr(f.offset, f.length)});
  return out;
}

bool operator==(const Piece& a, const Piece& b) {
  return a.token == b.token && a.text == b.text;
}
void PrintTo(const Piece& p, std::ostream* os) {
  *os << "{" << p.token << ", \"" << p.text << "\"}";
}

TEST(SpecialMatcher, SplitsOnControlTokensOnlyWhenAsked) {
  tok::SpecialMatcher m;
  m.build({"a", "<|im_start|>", "<|im_end|>", "[PAD]"},
          {TokenType::kNormal, TokenType::kControl, TokenType::kControl, TokenType::kUserDefined});
  EXPECT_EQ(split(m, "<|im_start|>user\nhi<|im_end|>", true),
            (std::vector<Piece>{{1, ""}, {-1, "user\nhi"}, {2, ""}}));
  EXPECT_EQ(split(m, "<|im_start|>user", false), (std::vector<Piece>{{-1, "<|im_start|>user"}}));
  // User-defined tokens are ordinary added words: matched either way.
  EXPECT_EQ(split(m, "x[PAD][PAD]", false), (std::vector<Piece>{{-1, "x"}, {3, ""}, {3, ""}}));
  EXPECT_EQ(split(m, "", true), (std::vector<Piece>{}));
  EXPECT_EQ(split(m, "<|im_", true), (std::vector<Piece>{{-1, "<|im_"}}));
}

TEST(SpecialMatcher, LongerTokensWinOverlaps) {
  tok::SpecialMatcher m;
  m.build({"ab", "bcd", "<s>", "<s><s>"},
          {TokenType::kControl, TokenType::kControl, TokenType::kControl, TokenType::kControl});
  // "bcd" (longer) is taken first, so "ab" cannot match in "abcd".
  EXPECT_EQ(split(m, "abcd", true), (std::vector<Piece>{{-1, "a"}, {1, ""}}));
  EXPECT_EQ(split(m, "<s><s><s>", true), (std::vector<Piece>{{3, ""}, {2, ""}}));
  EXPECT_EQ(split(m, "abab", true), (std::vector<Piece>{{0, ""}, {0, ""}}));
}

TEST(SpecialTokens, SpmAddsSpaceAfterSpecialToken) {
  const std::string sp = "\xE2\x96\x81";
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "<|im_end|>", sp, "a", sp + "a"};
  v.token_types = {2, 3, 3, 3, 1, 1, 1};
  v.scores = {0, 0, 0, 0, -1, -1, 0};
  auto t = Tokenizer::from_vocab(v);
  EXPECT_EQ(t.encode("a<|im_end|>a", true, true), (Ids{1, 6, 3, 6}));
  EXPECT_EQ(t.encode("<s>a", false, true), (Ids{1, 6}));
  // Without parse_special the text is plain: '<' etc. have no pieces and no byte tokens.
  EXPECT_EQ(t.encode("a<s>", false, false), (Ids{6, 0, 0, 0}));
  EXPECT_EQ(t.decode(Ids{1, 6, 3, 6}), "a a");
  EXPECT_EQ(t.decode(Ids{1, 6, 3, 6}, /*skip_special=*/false), "<s> a<|im_end|> a");
  EXPECT_TRUE(t.is_eog(3));
}

TEST(SpecialTokens, ByteLevelModelKeepsSpecialTokensWhole) {
  VocabData v;
  v.model = "gpt2";
  v.pre = "qwen2";
  v.tokens = {"h", "i", "\xC4\xA0", "<|im_start|>", "<|im_end|>"};
  v.token_types = {1, 1, 1, 3, 3};
  v.merges = {};
  auto t = Tokenizer::from_vocab(v);
  EXPECT_EQ(t.encode("<|im_start|>hi <|im_end|>", false, true), (Ids{3, 0, 1, 2, 4}));
  EXPECT_EQ(t.decode(Ids{3, 0, 1, 2, 4}), "hi ");
  EXPECT_EQ(t.decode(Ids{3, 0, 1, 2, 4}, false), "<|im_start|>hi <|im_end|>");
}

}  // namespace
}  // namespace strata
