// Regex pre-tokenizers: every family compiles, and splits follow llama.cpp's regexes.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace strata {
namespace {

std::vector<std::string> words(const tok::Pretokenizer& p, const std::string& text) {
  std::vector<tok::TextSpan> spans;
  p.split(text, spans);
  std::vector<std::string> out;
  size_t covered = 0;
  for (const auto& s : spans) {
    EXPECT_EQ(s.offset, covered) << "pieces must tile the text";
    covered = s.offset + s.length;
    out.push_back(text.substr(s.offset, s.length));
  }
  EXPECT_EQ(covered, text.size());
  return out;
}

using Words = std::vector<std::string>;

TEST(Pretokenizer, EveryFamilyCompiles) {
  for (const char* name :
       {"default",        "gpt-2",       "gpt-neox",   "mpt",       "olmo",      "llama3",
        "llama-bpe",      "dbrx",        "qwen2",      "qwen35",    "stablelm2", "deepseek-llm",
        "deepseek-coder", "deepseek-v3", "falcon",     "starcoder", "refact",    "command-r",
        "smollm",         "bloom",       "poro-chat",  "viking",    "tekken",    "gpt-4o",
        "llama4",         "seed-coder",  "bailingmoe", "grok-2",    "chameleon", "chatglm-bpe"}) {
    const auto p = tok::Pretokenizer::for_family(name);
    EXPECT_EQ(p.family().empty(), false) << name;
    const std::string text =
        "Hello, world!  It's 2024\r\n\tnaïve café 你好 \xF0\x9F\x98\x80 x\xFFy";
    std::string joined;
    for (const auto& w : words(p, text)) joined += w;
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(Pretokenizer, Gpt2) {
  const auto p = tok::Pretokenizer::for_family("gpt-2");
  EXPECT_EQ(words(p, "Hello world's  3.14!!"),
            (Words{"Hello", " world", "'s", " ", " 3", ".", "14", "!!"}));
  EXPECT_EQ(words(p, "a   \n b"), (Words{"a", "   \n", " b"}));
  EXPECT_EQ(words(p, "trailing   "), (Words{"trailing", "   "}));
  // Invalid UTF-8 never matches: it stays, in its own piece.
  EXPECT_EQ(words(p,
                  "ab\xFF\xFE"
                  "cd"),
            (Words{"ab", "\xFF\xFE", "cd"}));
}

TEST(Pretokenizer, Llama3) {
  const auto p = tok::Pretokenizer::for_family("llama-bpe");
  EXPECT_TRUE(p.ignore_merges());
  EXPECT_TRUE(p.default_add_bos());
  EXPECT_EQ(words(p, "I'M 1234567 ok\n\n  x"),
            (Words{"I", "'M", " ", "123", "456", "7", " ok", "\n\n", " ", " x"}));
}

TEST(Pretokenizer, Qwen2SplitsDigitsOneByOne) {
  const auto p = tok::Pretokenizer::for_family("qwen2");
  EXPECT_EQ(words(p, "x123"), (Words{"x", "1", "2", "3"}));
}

TEST(Pretokenizer, FalconAndDefaultChains) {
  const auto falcon = tok::Pretokenizer::for_family("falcon");
  EXPECT_EQ(words(falcon, "a, b 1234567"), (Words{"a", ",", " b", " ", "123", "456", "7"}));
  const auto deepseek = tok::Pretokenizer::for_family("deepseek-llm");
  EXPECT_EQ(words(deepseek, "Hi 123 \xE4\xBD\xA0\xE5\xA5\xBD\n"),
            (Words{"Hi", " ", "123", " ", "\xE4\xBD\xA0\xE5\xA5\xBD", "\n"}));
}

TEST(Pretokenizer, NonAsciiWhitespaceIsWhitespace) {
  // U+0085 (next line) and U+3000 are White_Space, as in llama.cpp.
  const auto p = tok::Pretokenizer::for_family("gpt-2");
  EXPECT_EQ(words(p,
                  "a\xC2\x85\xC2\x85"
                  "b"),
            (Words{"a", "\xC2\x85", "\xC2\x85", "b"}));
  EXPECT_EQ(words(p, "a\xE3\x80\x80\xE3\x80\x80"), (Words{"a", "\xE3\x80\x80\xE3\x80\x80"}));
}

TEST(Pretokenizer, UnknownFamilyFallsBackToDefault) {
  const auto p = tok::Pretokenizer::for_family("no-such-family");
  EXPECT_EQ(p.family(), "default");
  EXPECT_EQ(words(p, "x, y"), (Words{"x", ",", " y"}));
}

TEST(Pretokenizer, EmptyMatchesSplitAndBadPatternsThrow) {
  const auto p = tok::Pretokenizer::from_patterns({"(?=(\\d{3})+(?!\\d))"});
  EXPECT_EQ(words(p, "1234567"), (Words{"1", "234", "567"}));
  EXPECT_THROW(tok::Pretokenizer::from_patterns({"[unclosed"}), Error);
}

}  // namespace
}  // namespace strata
