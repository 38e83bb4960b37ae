// libFuzzer target for the tokenizers: encodes and decodes arbitrary bytes.
//
// STRATA_FUZZ_VOCAB names one GGUF file, or several separated by ':'; without it the
// target uses two small built-in vocabularies (sentencepiece and byte-level BPE). The
// first input byte picks the vocabulary and the flags; the rest is text. Checks:
//   - encode never fails and yields ids inside the vocabulary;
//   - byte-level BPE is lossless: decode(encode(text)) == text without parse_special
//     (for bytes the vocabulary has);
//   - the same bytes read as token ids decode without error, and the streaming decoder
//     yields valid UTF-8.
//
// Build (clang): clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
//   tests/fuzz/tokenizer_fuzz.cpp src/tokenizer/*.cpp src/gguf/*.cpp src/core/*.cpp \
//   -lpcre2-8 -o tokenizer_fuzz
// Run:   STRATA_FUZZ_VOCAB=../shared/vocab/ggml-vocab-gpt-2.gguf ./tokenizer_fuzz corpus/
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using strata::Tokenizer;
using strata::VocabData;

Tokenizer builtin_spm() {
  static constexpr char kHex[] = "0123456789ABCDEF";
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"};
  v.token_types = {2, 3, 3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    v.token_types.push_back(6);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  const char* pieces[] = {"\xE2\x96\x81",
                          "a",
                          "b",
                          "ab",
                          "\xE2\x96\x81\x61",  // "▁a"
                          "ba",
                          "\xE2\x96\x81\xE2\x96\x81",
                          "\xC3\xA9"};
  float score = 0;
  for (const char* p : pieces) {
    v.tokens.push_back(p);
    v.token_types.push_back(1);
    v.scores.push_back(score -= 1);
  }
  return Tokenizer::from_vocab(v);
}

Tokenizer builtin_bpe() {
  VocabData v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(strata::tok::byte_alphabet().byte_to_utf8[b]);
  for (const char* t : {"ab", "abc",
                        "\xC4\xA0\x61",  // "Ġa"
                        "<|endoftext|>", "  "})
    v.tokens.push_back(t);
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types[259] = 3;
  v.token_types[260] = 4;  // user-defined: matched even without parse_special
  v.merges = {"a b", "ab c", "\xC4\xA0 a", "c c", "cc cc"};
  v.bos = 259;
  return Tokenizer::from_vocab(v);
}

std::vector<Tokenizer> load_tokenizers() {
  std::vector<Tokenizer> out;
  const char* env = std::getenv("STRATA_FUZZ_VOCAB");
  if (env == nullptr || *env == '\0') {
    out.push_back(builtin_spm());
    out.push_back(builtin_bpe());
    return out;
  }
  std::string_view paths = env;
  while (!paths.empty()) {
    const size_t colon = paths.find(':');
    const std::string path(paths.substr(0, colon));
    out.push_back(Tokenizer::from_gguf(strata::gguf::GgufFile::open(path)));
    paths = colon == std::string_view::npos ? std::string_view() : paths.substr(colon + 1);
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = strata::tok::utf8_valid_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

// Byte-level BPE gives back only bytes that have a normal token: some vocabularies lack
// the bytes that never occur in UTF-8 (0xC0, 0xC1, 0xF5..0xFF), and those are dropped;
// others have them as user-defined tokens, which decode as their text (as in llama.cpp).
bool has_all_bytes(const Tokenizer& tok, std::string_view text) {
  for (unsigned char c : text) {
    const auto id = tok.token_id(strata::tok::byte_alphabet().byte_to_utf8[c]);
    if (!id || tok.token_type(*id) != strata::TokenType::kNormal) return false;
  }
  return true;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Tokenizer> tokenizers = load_tokenizers();
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const Tokenizer& tok = tokenizers[(flags >> 2) % tokenizers.size()];
  const bool parse_special = (flags & 1) != 0;
  const bool add_bos = (flags & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, add_bos, parse_special);
  for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab());
  const std::string decoded = tok.decode(ids, /*skip_special=*/false);
  if (!tok.is_spm() && !parse_special && !add_bos && has_all_bytes(tok, text))
    check(decoded == text);

  // The input as token ids (4 bytes each, any value).
  std::vector<int32_t> raw_ids(text.size() / 4);
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), text.data(), raw_ids.size() * 4);
  for (int32_t& id : raw_ids) id = id % (tok.n_vocab() + 8);  // mostly in range, some not
  (void)tok.decode(raw_ids);
  strata::StreamingDecoder stream(tok);
  std::string streamed;
  for (int32_t id : raw_ids) streamed += stream.push(id);
  streamed += stream.flush();
  check(valid_utf8(streamed));
  return 0;
}
