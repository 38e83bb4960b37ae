#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace strata {

namespace {

using tok::ModelKind;
using tok::TokenizerImpl;

void encode_spm(const TokenizerImpl& t, std::string_view text,
                const std::vector<tok::Fragment>& fragments, std::vector<int32_t>& out) {
  std::string normalized;
  bool after_special = true;  // a space goes before the text and after each special token
  for (const tok::Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    normalized.clear();
    normalized.reserve(f.length + f.length / 2 + 3);
    if (t.add_space_prefix && after_special) normalized += tok::kSpmSpace;
    for (char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        normalized += tok::kSpmSpace;
      } else {
        normalized += c;
      }
    }
    tok::spm_encode(t, normalized, out);
    after_special = false;
  }
}

void encode_bpe(const TokenizerImpl& t, std::string_view text,
                const std::vector<tok::Fragment>& fragments, std::vector<int32_t>& out) {
  tok::BpeScratch bpe;
  const bool ignore_merges = t.pretokenizer.ignore_merges();
  tok::WordCache& cache = tok::WordCache::for_tokenizer(t.id);
  const auto encode_word = [&](std::string_view word) {
    if (word.size() == 1) {  // quicker than the cache
      tok::bpe_encode_word(t, word, ignore_merges, bpe, out);
      return;
    }
    if (cache.append(word, out)) return;
    const size_t first = out.size();
    tok::bpe_encode_word(t, word, ignore_merges, bpe, out);
    cache.store(word, std::span(out).subspan(first));
  };
  for (const tok::Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
    } else {
      t.pretokenizer.for_each_word(text.substr(f.offset, f.length), encode_word);
    }
  }
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::from_vocab(VocabData data) {
  return Tokenizer(tok::build_tokenizer(std::move(data)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
  return encode_impl(text, add_bos, parse_special, {});
}

std::vector<int32_t> Tokenizer::encode_guarded(std::string_view text, bool add_bos,
                                               std::span<const TextSpan> plain) const {
  return encode_impl(text, add_bos, true, plain);
}

std::vector<TextSpan> Tokenizer::control_token_spans(std::string_view text) const {
  std::vector<tok::Fragment> fragments;
  impl_->specials.split(text, true, fragments);
  std::vector<TextSpan> spans;
  for (const tok::Fragment& f : fragments) {
    if (f.token >= 0 && !impl_->specials.always_matches(f.token))
      spans.push_back({f.offset, f.length});
  }
  return spans;
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool add_bos, bool parse_special,
                                            std::span<const TextSpan> plain) const {
  const TokenizerImpl& t = *impl_;
  if (text.size() >= (size_t{1} << 31)) {
    throw Error("tokenizer: text of " + std::to_string(text.size()) +
                " bytes is too long to encode");
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_bos && t.add_bos) out.push_back(t.bos);
  if (!text.empty()) {
    std::vector<tok::Fragment> fragments;
    t.specials.split(text, parse_special, fragments, plain);
    if (t.kind == ModelKind::kSpm) {
      encode_spm(t, text, fragments, out);
    } else {
      encode_bpe(t, text, fragments, out);
    }
  }
  if (add_bos && t.add_eos) out.push_back(t.eos);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const TokenizerImpl& t = *impl_;
  std::string out;
  out.reserve(ids.size() * 4);
  // The space encode() put before the text comes back as the first piece's leading space.
  bool strip_space = t.kind == ModelKind::kSpm && t.add_space_prefix;
  for (int32_t id : ids) {
    if (!t.in_range(id) || (skip_special && t.is_special_text(id))) continue;
    std::string_view piece = t.pieces[id];
    if (piece.empty()) continue;
    if (strip_space && piece[0] == ' ') piece.remove_prefix(1);
    strip_space = false;
    out += piece;
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id) const {
  if (!impl_->in_range(id))
    throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary");
  return impl_->pieces[id];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (!impl_->in_range(id))
    throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary");
  return impl_->texts[id];
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const {
  const int32_t id = impl_->piece_ids.find(text);
  if (id < 0) return std::nullopt;
  return id;
}

int32_t Tokenizer::n_vocab() const {
  return impl_->n_vocab();
}
int32_t Tokenizer::bos_id() const {
  return impl_->bos;
}
int32_t Tokenizer::eos_id() const {
  return impl_->eos;
}
int32_t Tokenizer::eot_id() const {
  return impl_->eot;
}
int32_t Tokenizer::unk_id() const {
  return impl_->unk;
}
int32_t Tokenizer::pad_id() const {
  return impl_->pad;
}
bool Tokenizer::add_bos() const {
  return impl_->add_bos;
}
bool Tokenizer::add_eos() const {
  return impl_->add_eos;
}
bool Tokenizer::is_spm() const {
  return impl_->kind == ModelKind::kSpm;
}
bool Tokenizer::is_eog(int32_t id) const {
  return impl_->in_range(id) && impl_->eog[id] != 0;
}
bool Tokenizer::is_control(int32_t id) const {
  return impl_->in_range(id) && impl_->types[id] == TokenType::kControl;
}
TokenType Tokenizer::token_type(int32_t id) const {
  return impl_->in_range(id) ? impl_->types[id] : TokenType::kUndefined;
}

}  // namespace strata
