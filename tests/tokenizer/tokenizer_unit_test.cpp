// Model-free tests of the two tokenizers on tiny hand-made vocabularies: merge order,
// fallbacks, metadata defaults, and rejection of malformed tokenizer data.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using Ids = std::vector<int32_t>;
const std::string kSp = "\xE2\x96\x81";  // U+2581

// <unk> <s> </s>, then the given pieces with the given scores.
VocabData tiny_spm(const std::vector<std::pair<std::string, float>>& pieces, bool byte_tokens) {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.token_types = {2, 3, 3};
  if (byte_tokens) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
      v.scores.push_back(0);
      v.token_types.push_back(6);
    }
  }
  for (const auto& [text, score] : pieces) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(1);
  }
  return v;
}

TEST(SpmTokenizer, MergesHighestScoreFirst) {
  // ids: 3 ▁, 4 a, 5 b, 6 c, 7 ab, 8 bc, 9 ▁a
  auto t = Tokenizer::from_vocab(tiny_spm(
      {{kSp, -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -2}, {kSp + "a", -3}},
      false));
  // "▁abc": ▁a(-3) vs ab(-5) vs bc(-2): bc first, then ▁a.
  EXPECT_EQ(t.encode("abc", false, false), (Ids{9, 8}));
  EXPECT_EQ(t.decode(Ids{9, 8}), "abc");
  EXPECT_EQ(t.encode("abc", true, false), (Ids{1, 9, 8}));
  EXPECT_EQ(t.encode("", true, false), (Ids{1}));
  EXPECT_EQ(t.encode("", false, false), (Ids{}));
}

TEST(SpmTokenizer, TiesGoToTheLeftmostPair) {
  // ids: 3 a, 4 aa. "▁aaa" has no ▁ piece: "aa" at 1-2 and 2-3 tie; the left one wins.
  auto t = Tokenizer::from_vocab(tiny_spm({{"a", 0}, {"aa", -1}}, false));
  EXPECT_EQ(t.encode("aaa", false, false), (Ids{0, 4, 3}));  // no ▁ piece, no byte tokens: <unk>
}

TEST(SpmTokenizer, ByteFallbackAndUnknown) {
  auto with_bytes = Tokenizer::from_vocab(tiny_spm({{kSp, 0}, {"a", 0}}, true));
  // "▁" = id 259, "a" = 260; 'é' (C3 A9) has no piece -> its bytes.
  EXPECT_EQ(with_bytes.encode("a\xC3\xA9", false, false), (Ids{259, 260, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(with_bytes.decode(Ids{259, 260, 3 + 0xC3, 3 + 0xA9}), "a\xC3\xA9");
  // Invalid UTF-8 bytes are kept byte by byte.
  EXPECT_EQ(with_bytes.encode("\xFF"
                              "a",
                              false, false),
            (Ids{259, 3 + 0xFF, 260}));
  auto without_bytes = Tokenizer::from_vocab(tiny_spm({{kSp, 0}, {"a", 0}}, false));
  EXPECT_EQ(without_bytes.encode("a\xC3\xA9", false, false),
            (Ids{3, 4, 0}));  // one <unk> per character
}

TEST(SpmTokenizer, MetadataSwitches) {
  VocabData v = tiny_spm({{kSp, 0}, {"a", 0}}, false);
  v.add_space_prefix = false;
  v.add_bos = false;
  v.add_eos = true;
  auto t = Tokenizer::from_vocab(v);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.encode("a a", true, false), (Ids{4, 3, 4, 2}));
  EXPECT_EQ(t.decode(Ids{3, 4}), " a");  // no dummy prefix to remove
  EXPECT_EQ(t.decode(Ids{1, 4, 2}, /*skip_special=*/false), "<s>a</s>");
}

// A byte-level vocabulary: the 256 byte symbols (ids 0..255, in GPT-2 alphabet order),
// then the given merges' results where listed in `extra`.
VocabData tiny_bpe(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  VocabData v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  uint32_t next = 0;
  for (int b = 0; b < 256; ++b) {
    // GPT-2 alphabet: printable bytes are themselves, the rest are U+0100 + n.
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256 + next++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    v.tokens.push_back(s);
  }
  for (const auto& e : extra) v.tokens.push_back(e);
  v.merges = merges;
  return v;
}

TEST(BpeTokenizer, MergesByRank) {
  // 256 "he", 257 "ll", 258 "hell", 259 "Ġh"
  auto t = Tokenizer::from_vocab(
      tiny_bpe({"he", "ll", "hell", "\xC4\xA0h"}, {"\xC4\xA0 h", "l l", "h e", "he ll"}));
  EXPECT_EQ(t.encode("hello", false, false), (Ids{258, 'o'}));
  EXPECT_EQ(t.encode("hello hello", false, false), (Ids{258, 'o', 259, 'e', 257, 'o'}));
  EXPECT_EQ(t.decode(Ids{258, 'o', 259, 'e', 257, 'o'}), "hello hello");
  EXPECT_EQ(t.token_to_piece(259), " h");
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.bos_id(), -1);
}

TEST(BpeTokenizer, MergeIntoUnknownStringFallsBackToBytes) {
  // "x y" merges into "xy", which is no token; "xy z" makes the token "xyz".
  auto t = Tokenizer::from_vocab(tiny_bpe({"xyz"}, {"x y", "xy z"}));
  EXPECT_EQ(t.encode("xyz", false, false), (Ids{256}));
  EXPECT_EQ(t.encode("xy", false, false), (Ids{'x', 'y'}));
}

TEST(BpeTokenizer, WordCacheIsPerTokenizer) {
  // Two vocabularies that split the same word differently, used alternately on one thread.
  auto merged = Tokenizer::from_vocab(tiny_bpe({"ab"}, {"a b"}));
  auto plain = Tokenizer::from_vocab(tiny_bpe({"ab"}, {}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(merged.encode("ab ab", false, false), (Ids{256, ' ', 256}));
    EXPECT_EQ(plain.encode("ab ab", false, false), (Ids{'a', 'b', ' ', 'a', 'b'}));
  }
}

TEST(BpeTokenizer, InvalidUtf8RoundTrips) {
  auto t = Tokenizer::from_vocab(tiny_bpe({}, {}));
  const std::string text = "a\xFF\xC3(\xE2\x82 \x80z\xF0\x9F\x98\x80";
  EXPECT_EQ(t.decode(t.encode(text, false, false)), text);
}

TEST(BpeTokenizer, Llama3IgnoresMergesForWholeWords) {
  VocabData v = tiny_bpe({"ab", "abc"}, {"a b"});
  v.pre = "llama-bpe";
  v.bos = 256;
  auto t = Tokenizer::from_vocab(v);
  EXPECT_TRUE(t.add_bos());                              // llama3 family default
  EXPECT_EQ(t.encode("abc", false, false), (Ids{257}));  // whole word is a token
  v.pre = "gpt-2";
  EXPECT_EQ(Tokenizer::from_vocab(v).encode("abc", false, false), (Ids{256, 'c'}));
}

TEST(Tokenizer, EndOfGenerationAndLookups) {
  VocabData v = tiny_bpe({"<|im_start|>", "<|im_end|>", "<|endoftext|>"}, {});
  v.eos = 258;
  auto t = Tokenizer::from_vocab(v);
  EXPECT_TRUE(t.is_eog(257));  // <|im_end|> by name, made a control token
  EXPECT_TRUE(t.is_control(257));
  EXPECT_TRUE(t.is_eog(258));
  EXPECT_FALSE(t.is_eog(256));
  EXPECT_EQ(t.eot_id(), 257);
  EXPECT_EQ(t.token_id("<|im_end|>"), 257);
  EXPECT_EQ(t.token_id("nope"), std::nullopt);
  EXPECT_THROW(t.token_text(9999), Error);
  EXPECT_THROW(t.token_to_piece(-1), Error);
  EXPECT_FALSE(t.is_eog(-5));
  EXPECT_EQ(t.decode(Ids{'a', 9999, -3, 'b'}), "ab");  // ids outside the vocabulary are skipped
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tokenizer, RejectsMalformedData) {
  auto bad = [](auto mutate) {
    VocabData v = tiny_bpe({}, {"a b"});
    mutate(v);
    return error_of([&] { Tokenizer::from_vocab(v); });
  };
  EXPECT_NE(bad([](VocabData& v) { v.model = "bert"; }).find("tokenizer.ggml.model"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) { v.tokens.clear(); }).find("tokenizer.ggml.tokens"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) {
              v.scores = {1, 2};
            }).find("tokenizer.ggml.scores"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) { v.token_types = {1}; }).find("tokenizer.ggml.token_type"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) { v.merges.push_back("ab"); }).find("tokenizer.ggml.merges[1]"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) { v.merges.push_back("a "); }).find("tokenizer.ggml.merges[1]"),
            std::string::npos);
  EXPECT_NE(bad([](VocabData& v) { v.add_bos = true; }).find("tokenizer.ggml.add_bos_token"),
            std::string::npos);
  // Tolerated like llama.cpp does: odd types, out-of-range ids, NaN scores, empty pieces.
  VocabData v = tiny_bpe({""}, {"a b"});
  v.token_types.assign(v.tokens.size(), 42);
  v.scores.assign(v.tokens.size(), std::nanf(""));
  v.eos = 123456;
  v.pad = -1;
  auto t = Tokenizer::from_vocab(v);
  EXPECT_EQ(t.eos_id(), -1);
  EXPECT_EQ(t.token_type(0), TokenType::kUndefined);
  EXPECT_EQ(t.decode(t.encode("ab", false, false)), "");  // undefined tokens decode to nothing
}

}  // namespace
}  // namespace strata
