// StreamingDecoder: whole UTF-8 characters only, U+FFFD for bytes that can never form
// one, the sentencepiece leading space after BOS, and no text for control tokens.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace strata {
namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

// <unk> <s> </s>, 256 byte tokens (ids 3..258), then ▁ (259), ▁a (260), é (261).
Tokenizer byte_fallback_spm() {
  static constexpr char kHex[] = "0123456789ABCDEF";
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    v.token_types.push_back(6);
  }
  for (const char* piece : {"\xE2\x96\x81",
                            "\xE2\x96\x81"
                            "a",
                            "\xC3\xA9"}) {
    v.tokens.push_back(piece);
    v.token_types.push_back(1);
  }
  return Tokenizer::from_vocab(v);
}

int32_t byte_token(unsigned char b) {
  return 3 + b;
}

TEST(StreamingDecoder, BuffersByteTokensUntilACharacterIsComplete) {
  const Tokenizer t = byte_fallback_spm();
  StreamingDecoder d(t);
  // U+1F600 as four byte tokens: nothing until the last one.
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.push(byte_token(0x98)), "");
  EXPECT_EQ(d.push(byte_token(0x80)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(260), " a");
  EXPECT_EQ(d.push(byte_token(0xC3)), "");
  EXPECT_EQ(d.push(261), kFFFD + "\xC3\xA9");  // C3 then C3 A9: the first C3 can never complete
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer t = byte_fallback_spm();
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(byte_token(0xFF)), kFFFD);
  EXPECT_EQ(d.push(byte_token(0x80)), kFFFD);
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.push(byte_token(0x82)), "");
  EXPECT_EQ(d.push(byte_token('x')), kFFFD + "x");  // E2 82 is one maximal subpart
  EXPECT_EQ(d.push(byte_token(0xED)), "");
  EXPECT_EQ(d.push(byte_token(0xA0)), kFFFD + kFFFD);  // ED A0 would be a surrogate
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.flush(), kFFFD);  // unfinished at the end
  EXPECT_EQ(d.push(byte_token('y')), "y");
}

TEST(StreamingDecoder, DropsTheDummySpaceAfterBosAndSkipsControlTokens) {
  const Tokenizer t = byte_fallback_spm();
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(260), "a");
  EXPECT_EQ(d.push(260), " a");
  EXPECT_EQ(d.push(2), "");
  EXPECT_EQ(d.push(0), "");
  EXPECT_EQ(d.push(99999), "");
  EXPECT_EQ(d.push(-1), "");
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(259), "");  // "▁" right after BOS is the dummy space
  EXPECT_EQ(d.push(259), " ");
}

bool is_valid_utf8(const std::string& s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = tok::utf8_valid_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

TEST(StreamingDecoder, OutputIsValidUtf8AndMatchesDecode) {
  const Tokenizer t = byte_fallback_spm();
  uint32_t state = 12345;
  int compared = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<int32_t> ids = {1};
    for (int i = 0; i < 8; ++i) {
      state = state * 1664525u + 1013904223u;
      const uint32_t r = state >> 8;
      if (r % 5 == 0) {
        ids.push_back(static_cast<int32_t>(259 + r % 3));  // a piece
      } else if (r % 5 == 1 && round % 2 == 0) {
        ids.push_back(byte_token(0x80 + (r >> 4) % 0x80));  // a stray byte, half the rounds
      } else {
        // A whole random character (1..4 bytes) as byte tokens.
        static const uint32_t kStarts[] = {0x41, 0xE9, 0x20AC, 0x1F600};
        std::string ch;
        tok::utf8_append(ch, kStarts[r % 4] + (r >> 6) % 16);
        for (unsigned char c : ch) ids.push_back(byte_token(c));
      }
    }
    StreamingDecoder d(t);
    std::string streamed;
    for (int32_t id : ids) streamed += d.push(id);
    streamed += d.flush();
    EXPECT_TRUE(is_valid_utf8(streamed));
    const std::string decoded = t.decode(ids);
    if (is_valid_utf8(decoded)) {
      EXPECT_EQ(streamed, decoded);
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace strata
