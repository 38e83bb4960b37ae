// libFuzzer target for whole GGUF files read from memory: GgufFile::from_buffer, then
// everything a loaded file exposes (metadata values, the typed getters, every tensor's
// bytes), the tokenizer built from it (Tokenizer::from_gguf, plus an encode/decode round),
// the model configuration (config_from_gguf) and the weight binding (load_weights, which
// checks names, shapes and types and converts the f32 vectors) — all of model loading
// that runs without a forward pass.
//
// Every stage either succeeds or throws strata::Error; any other exception, a crash, a
// sanitizer report or a failed check() is a finding. The input is the file itself, so
// real models and vocabularies are the seed corpus (scripts/fuzz-smoke.sh builds one from
// ../shared; run with -max_len at least the largest seed).
//
// Build (clang): see scripts/fuzz-smoke.sh.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "model/config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace {

using strata::gguf::GgufFile;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

volatile uint64_t g_sink;

void touch(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  g_sink = g_sink + bytes.front() + bytes.back() + bytes[bytes.size() / 2];
}

void exercise_file(const GgufFile& f) {
  uint64_t sum = 0;
  for (const auto& [key, value] : f.metadata()) {
    sum += key.size() + value.to_display().size();
    // The typed getters on every key: each returns or throws strata::Error.
    try {
      sum += f.get_string(key).size();
    } catch (const strata::Error&) {
    }
    try {
      sum += f.get_uint(key);
    } catch (const strata::Error&) {
    }
    try {
      sum += static_cast<uint64_t>(f.get_int(key));
    } catch (const strata::Error&) {
    }
    try {
      sum += static_cast<uint64_t>(f.get_float(key) != 0);
    } catch (const strata::Error&) {
    }
    try {
      sum += f.get_bool(key);
    } catch (const strata::Error&) {
    }
    try {
      sum += f.get_string_array(key).size();
    } catch (const strata::Error&) {
    }
    try {
      sum += f.get_float_array(key).size();
    } catch (const strata::Error&) {
    }
    try {
      sum += f.get_int_array(key).size();
    } catch (const strata::Error&) {
    }
  }
  for (const auto& t : f.tensors()) {
    check(f.find_tensor(t.name) != nullptr);
    const auto bytes = f.tensor_bytes(t);
    check(bytes.size() == t.n_bytes);
    check(f.data_offset() + t.offset + t.n_bytes <= f.file_size());
    touch(bytes);
  }
  g_sink = g_sink + sum;
}

void exercise_tokenizer(const GgufFile& f) {
  strata::Tokenizer tok = strata::Tokenizer::from_gguf(f);
  check(tok.n_vocab() > 0);
  static const std::string kText =
      "Hello world! <s> <|im_start|>user\n\xC3\xA9t\xC3\xA9  123 \xF0\x9F\x98\x80</s>";
  for (const bool special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(kText, /*add_bos=*/true, special);
    for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab());
    g_sink = g_sink + tok.decode(ids, special).size();
  }
  // Every token decodes (the vocabulary's own text, hostile or not).
  const int32_t n = std::min<int32_t>(tok.n_vocab(), 4096);
  std::vector<int32_t> all(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  g_sink = g_sink + tok.decode(all, false).size();
  strata::StreamingDecoder stream(tok);
  for (int32_t id : all) g_sink = g_sink + stream.push(id).size();
  g_sink = g_sink + stream.flush().size();
}

void exercise_model(GgufFile& f) {
  strata::ModelConfig c = strata::config_from_gguf(f);
  check(c.dim > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0);
  check(c.n_heads % c.n_kv_heads == 0);
  check(c.rope_dim <= c.head_dim && c.rope_dim % 2 == 0);
  for (const bool repack : {false, true}) {
    strata::ModelConfig cc = c;
    const strata::ModelWeights w = strata::load_weights(f, cc, repack);
    check(cc.n_vocab > 0);
    check(w.layers.size() == static_cast<size_t>(cc.n_layers));
    check(w.token_embd.rows == cc.n_vocab && w.token_embd.cols == cc.dim);
    check(w.output_norm.size() == static_cast<size_t>(cc.dim));
    for (const strata::LayerWeights& l : w.layers) {
      for (const strata::WeightMatrix* m :
           {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        check(m->data != nullptr && m->rows > 0 && m->cols > 0);
        touch({m->row(0), m->row_bytes});
        touch({m->row(m->rows - 1), m->row_bytes});
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    GgufFile f = GgufFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
    exercise_file(f);
    try {
      exercise_tokenizer(f);
    } catch (const strata::Error&) {
    }
    exercise_model(f);
  } catch (const strata::Error&) {
  }
  return 0;
}
