#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace strata {

namespace {

// Appends the whole characters at the start of `bytes` to `out`, with U+FFFD for each
// maximal run of bytes that can never become a character. Stops before a trailing
// sequence that later bytes may still complete; returns the bytes consumed.
size_t drain_complete(std::string_view bytes, std::string& out) {
  size_t pos = 0, run_start = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const tok::Utf8Prefix p = tok::utf8_classify_prefix(bytes.substr(pos));
    if (p.complete > 0) {
      pos += p.complete;
      continue;
    }
    out.append(bytes.substr(run_start, pos - run_start));
    if (p.need_more) return pos;
    out.append(tok::kReplacementChar);
    pos += p.invalid;
    run_start = pos;
  }
  out.append(bytes.substr(run_start, pos - run_start));
  return pos;
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tok) : impl_(tok.impl_) {
  pending_.reserve(16);
}

std::string StreamingDecoder::push(int32_t id) {
  const tok::TokenizerImpl& t = *impl_;
  std::string out;
  if (!t.in_range(id) || t.is_special_text(id)) {
    after_bos_ = id == t.bos && id >= 0;
    return out;
  }
  std::string_view piece = t.pieces[id];
  // sentencepiece puts a space before the text; the piece right after BOS carries it.
  if (after_bos_ && t.kind == tok::ModelKind::kSpm && t.add_space_prefix && !piece.empty() &&
      piece[0] == ' ') {
    piece.remove_prefix(1);
  }
  after_bos_ = false;
  if (pending_.empty()) {
    const size_t used = drain_complete(piece, out);
    pending_.assign(piece.substr(used));
  } else {
    pending_.append(piece);
    const size_t used = drain_complete(pending_, out);
    pending_.erase(0, used);
  }
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  const size_t used = drain_complete(pending_, out);
  // What is left is the start of a character that will now never be finished.
  if (used < pending_.size()) out.append(tok::kReplacementChar);
  pending_.clear();
  after_bos_ = false;
  return out;
}

}  // namespace strata
