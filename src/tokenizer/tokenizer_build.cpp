// Building a TokenizerImpl from VocabData: validation, special ids, end-of-generation
// tokens, decoded pieces and the encoder tables.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace strata::tok {

namespace {

constexpr size_t kMaxTokens = size_t{1} << 26;
constexpr size_t kMaxMerges = size_t{1} << 26;

// Token texts that end generation, and those that name the end-of-turn token when
// tokenizer.ggml.eot_token_id is absent, in order of preference (llama.cpp's lists).
constexpr std::string_view kDeepseekEnd =
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  kDeepseekEnd,    "<end_of_utterance>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",      "<|im_end|>",         "<|end|>",    "<|return|>", "<|call|>",
    "<end_of_turn>",   "<|endoftext|>",      "<|eom_id|>", "<EOT>",      "_<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", kDeepseekEnd};

// The byte of a "<0xNN>" piece, or -1.
int parse_byte_piece(const std::string& text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// What a normal piece decodes to: U+2581 -> space (spm), GPT-2 code points -> bytes (gpt2).
std::string decode_normal_piece(ModelKind kind, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    const std::string_view ch = text.substr(pos, len);
    if (kind == ModelKind::kSpm) {
      out += ch == kSpmSpace ? std::string_view(" ") : ch;
    } else {
      const int byte =
          utf8_valid_length(text, pos) == len ? byte_of_codepoint(utf8_decode(text, pos, len)) : -1;
      if (byte >= 0) {
        out += static_cast<char>(byte);
      } else {
        out += ch;  // not in the byte alphabet: keep the text as it is
      }
    }
    pos += len;
  }
  return out;
}

std::string make_piece(ModelKind kind, const std::string& text, TokenType type) {
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte:
      if (const int byte = parse_byte_piece(text); byte >= 0)
        return std::string(1, static_cast<char>(byte));
      return decode_normal_piece(kind, text);
    case TokenType::kNormal:
      return decode_normal_piece(kind, text);
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
  return {};
}

// A special token id from metadata: unset -> the family default; -1 -> none; outside the
// vocabulary -> a warning and the default (as llama.cpp does).
int32_t resolve_id(const char* key, std::optional<int32_t> value, int32_t fallback, int32_t n) {
  if (fallback >= n) fallback = -1;
  if (!value) return fallback;
  if (*value == -1) return -1;
  if (*value < 0 || *value >= n) {
    std::fprintf(stderr,
                 "strata: warning: %s = %d is outside the vocabulary (%d tokens); ignoring it\n",
                 key, *value, n);
    return fallback;
  }
  return *value;
}

void check_lengths(const VocabData& d) {
  const size_t n = d.tokens.size();
  if (n == 0) throw Error("tokenizer.ggml.tokens: the vocabulary is empty");
  if (n > kMaxTokens)
    throw Error("tokenizer.ggml.tokens: " + std::to_string(n) + " tokens is more than supported");
  if (!d.scores.empty() && d.scores.size() < n) {
    throw Error("tokenizer.ggml.scores: " + std::to_string(d.scores.size()) + " scores for " +
                std::to_string(n) + " tokens");
  }
  if (!d.token_types.empty() && d.token_types.size() < n) {
    throw Error("tokenizer.ggml.token_type: " + std::to_string(d.token_types.size()) +
                " types for " + std::to_string(n) + " tokens");
  }
  if (d.merges.size() > kMaxMerges) {
    throw Error("tokenizer.ggml.merges: " + std::to_string(d.merges.size()) +
                " merges is more than supported");
  }
}

void load_tokens(TokenizerImpl& t, VocabData& d) {
  const size_t n = d.tokens.size();
  t.texts = std::move(d.tokens);
  t.scores.assign(n, 0.0f);
  t.types.assign(n, TokenType::kNormal);
  for (size_t i = 0; i < n; ++i) {
    // NaN would break the merge queue's ordering; treat it as the lowest score.
    if (!d.scores.empty())
      t.scores[i] = std::isnan(d.scores[i]) ? -std::numeric_limits<float>::infinity() : d.scores[i];
    if (!d.token_types.empty()) {
      const int32_t type = d.token_types[i];
      t.types[i] = type >= 0 && type <= static_cast<int32_t>(TokenType::kByte)
                       ? static_cast<TokenType>(type)
                       : TokenType::kUndefined;
    }
    if (!t.texts[i].empty()) t.piece_ids.insert(t.texts[i], static_cast<int32_t>(i));
  }
}

void resolve_special_ids(TokenizerImpl& t, const VocabData& d) {
  const int32_t n = t.n_vocab();
  const bool spm = t.kind == ModelKind::kSpm;
  t.bos = resolve_id("tokenizer.ggml.bos_token_id", d.bos, spm ? 1 : -1, n);
  t.eos = resolve_id("tokenizer.ggml.eos_token_id", d.eos, spm ? 2 : -1, n);
  t.unk = resolve_id("tokenizer.ggml.unknown_token_id", d.unk, spm ? 0 : -1, n);
  t.pad = resolve_id("tokenizer.ggml.padding_token_id", d.pad, -1, n);
  t.eot = resolve_id("tokenizer.ggml.eot_token_id", d.eot, -1, n);
  t.eom = resolve_id("tokenizer.ggml.eom_token_id", d.eom, -1, n);
  for (std::string_view text : kEotTexts) {
    if (!d.eot && t.eot < 0) t.eot = t.piece_ids.find(text);
  }
  if (!d.eom && t.eom < 0) t.eom = t.piece_ids.find("<|eom_id|>");
}

// End-of-generation tokens; like llama.cpp, tokens named like one are made control tokens.
void mark_end_of_generation(TokenizerImpl& t) {
  t.eog.assign(t.texts.size(), 0);
  for (std::string_view text : kEogTexts) {
    const int32_t id = t.piece_ids.find(text);
    if (id < 0) continue;
    t.eog[id] = 1;
    t.types[id] = TokenType::kControl;
  }
  // gpt-oss (harmony) ends a message with <|end|> but a turn with <|return|> / <|call|>.
  const int32_t end = t.piece_ids.find("<|end|>");
  if (end >= 0 && t.piece_ids.find("<|return|>") >= 0 && t.piece_ids.find("<|call|>") >= 0) {
    t.eog[end] = 0;
  }
  for (int32_t id : {t.eos, t.eot, t.eom}) {
    if (id >= 0) t.eog[id] = 1;
  }
}

void find_byte_tokens(TokenizerImpl& t) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    int32_t id = -1;
    if (t.kind == ModelKind::kSpm) {
      const char name[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
      id = t.piece_ids.find(std::string_view(name, 6));
      if (id < 0) id = t.piece_ids.find(std::string(1, static_cast<char>(b)));
    } else {
      id = t.piece_ids.find(byte_alphabet().byte_to_utf8[b]);
    }
    t.byte_tokens[b] = id;
  }
}

}  // namespace

std::shared_ptr<const TokenizerImpl> build_tokenizer(VocabData data) {
  static std::atomic<uint64_t> next_id{1};
  auto t = std::make_shared<TokenizerImpl>();
  t->id = next_id.fetch_add(1);  // never reused, so per-thread word caches cannot go stale
  if (data.model == "llama") {
    t->kind = ModelKind::kSpm;
  } else if (data.model == "gpt2") {
    t->kind = ModelKind::kBpe;
  } else {
    throw Error("tokenizer.ggml.model: unsupported tokenizer " + quote_for_error(data.model) +
                " (supported: llama, gpt2)");
  }
  check_lengths(data);
  load_tokens(*t, data);
  resolve_special_ids(*t, data);
  mark_end_of_generation(*t);
  find_byte_tokens(*t);

  const bool spm = t->kind == ModelKind::kSpm;
  if (spm) {
    t->spm_cut_at_spaces = spm_pieces_allow_cuts(t->texts);
  } else {
    t->pretokenizer = Pretokenizer::for_family(data.pre);
    t->merges.build(t->piece_ids, t->n_vocab(), data.merges);
  }
  t->add_bos = data.add_bos.value_or(spm || t->pretokenizer.default_add_bos());
  t->add_eos = data.add_eos.value_or(false);
  t->add_space_prefix = data.add_space_prefix.value_or(spm);
  if (t->add_bos && t->bos < 0) {
    throw Error(
        "tokenizer.ggml.add_bos_token: BOS is to be added but there is no "
        "tokenizer.ggml.bos_token_id");
  }
  if (t->add_eos && t->eos < 0) {
    throw Error(
        "tokenizer.ggml.add_eos_token: EOS is to be added but there is no "
        "tokenizer.ggml.eos_token_id");
  }

  t->pieces.reserve(t->texts.size());
  for (size_t id = 0; id < t->texts.size(); ++id)
    t->pieces.push_back(make_piece(t->kind, t->texts[id], t->types[id]));
  t->specials.build(t->texts, t->types);
  return t;
}

}  // namespace strata::tok
