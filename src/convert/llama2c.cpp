#include "convert/llama2c.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "convert/spm_vocab.h"
#include "core/checked.h"
#include "core/error.h"
#include "gguf/gguf.h"

namespace strata {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Sequential reader over a byte buffer that names the file and offset on a short read.
class Cursor {
 public:
  Cursor(const std::vector<uint8_t>& bytes, std::string name)
      : bytes_(bytes), name_(std::move(name)) {}

  template <class T>
  T read(const char* field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field), sizeof(T));
    return v;
  }

  const uint8_t* take(uint64_t n, const char* field) {
    const auto end = checked_add(pos_, n);
    if (!end || *end > bytes_.size()) {
      throw Error(name_ + ": truncated while reading " + field + " at offset " +
                  std::to_string(pos_));
    }
    const uint8_t* p = bytes_.data() + pos_;
    pos_ = *end;
    return p;
  }

  uint64_t pos() const { return pos_; }

 private:
  const std::vector<uint8_t>& bytes_;
  std::string name_;
  uint64_t pos_ = 0;
};

struct Llama2cHeader {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

bool is_byte_piece(const std::string& s) {
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(s[3])) &&
         std::isxdigit(static_cast<unsigned char>(s[4]));
}

void add_vocabulary(gguf::GgufWriter& w, const std::string& path, int32_t vocab_size) {
  const auto bytes = read_file(path);
  Cursor cur(bytes, path);
  const auto max_len = cur.read<int32_t>("max_token_length");
  if (max_len <= 0 || max_len > (1 << 20)) throw Error(path + ": bad max_token_length");
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int32_t i = 0; i < vocab_size; ++i) {
    const float score = cur.read<float>("token score");
    const auto len = cur.read<int32_t>("token length");
    if (len < 0 || len > max_len) {
      throw Error(path + ": token " + std::to_string(i) + " has length " + std::to_string(len));
    }
    const uint8_t* p = cur.take(static_cast<uint64_t>(len), "token bytes");
    std::string piece(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    int32_t type = kTokenNormal;
    // llama2.c's exporter stored the special tokens as "<unk>", "\n<s>\n", "\n</s>\n".
    if (i == 0) {
      piece = "<unk>";
      type = kTokenUnknown;
    } else if (i == 1) {
      piece = "<s>";
      type = kTokenControl;
    } else if (i == 2) {
      piece = "</s>";
      type = kTokenControl;
    } else if (is_byte_piece(piece)) {
      type = kTokenByte;
    } else {
      // sentencepiece marks spaces with U+2581; the exporter wrote plain spaces.
      std::string spm;
      for (char c : piece) spm += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      piece = std::move(spm);
    }
    tokens.push_back(std::move(piece));
    scores.push_back(score);
    types.push_back(type);
  }
  write_spm_vocabulary(w, std::move(tokens), std::move(scores), std::move(types));
}

}  // namespace

void convert_llama2c(const Llama2cConvertOptions& opt) {
  const auto bytes = read_file(opt.checkpoint_path);
  Cursor cur(bytes, opt.checkpoint_path);
  Llama2cHeader h{};
  h.dim = cur.read<int32_t>("dim");
  h.hidden_dim = cur.read<int32_t>("hidden_dim");
  h.n_layers = cur.read<int32_t>("n_layers");
  h.n_heads = cur.read<int32_t>("n_heads");
  h.n_kv_heads = cur.read<int32_t>("n_kv_heads");
  h.vocab_size = cur.read<int32_t>("vocab_size");
  h.seq_len = cur.read<int32_t>("seq_len");
  const bool tied = h.vocab_size > 0;
  const int32_t vocab = tied ? h.vocab_size : -h.vocab_size;
  const auto in_range = [](int32_t v, int32_t hi) { return v > 0 && v <= hi; };
  if (!in_range(h.dim, 1 << 16) || !in_range(h.hidden_dim, 1 << 18) ||
      !in_range(h.n_layers, 1024) || !in_range(h.n_heads, 1024) || !in_range(h.n_kv_heads, 1024) ||
      !in_range(vocab, 1 << 22) || !in_range(h.seq_len, 1 << 24) || h.dim % h.n_heads != 0 ||
      h.n_heads % h.n_kv_heads != 0) {
    throw Error(opt.checkpoint_path + ": implausible llama2.c header");
  }
  const int64_t head = h.dim / h.n_heads;
  const int64_t kv_dim = head * h.n_kv_heads;
  const int64_t dim = h.dim, hid = h.hidden_dim, L = h.n_layers;

  gguf::GgufWriter w;
  const std::string name = opt.model_name.empty()
                               ? std::filesystem::path(opt.checkpoint_path).stem().string()
                               : opt.model_name;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", name);
  w.set_u32("general.file_type", 0);  // all f32
  w.set_u32("llama.context_length", static_cast<uint32_t>(h.seq_len));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(dim));
  w.set_u32("llama.block_count", static_cast<uint32_t>(L));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(hid));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(h.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(h.n_kv_heads));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(head));
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(vocab));
  add_vocabulary(w, opt.tokenizer_path, vocab);

  // The checkpoint stores matrices row-major [out][in], which is GGUF's ne = {in, out}.
  auto take_f32 = [&](int64_t n, const char* what) {
    return reinterpret_cast<const float*>(cur.take(static_cast<uint64_t>(n) * 4, what));
  };
  auto add = [&](const std::string& nm, const float* data, std::vector<int64_t> ne, int64_t n) {
    w.add_tensor(nm, DType::F32, std::move(ne), data, static_cast<size_t>(n) * 4);
  };
  auto per_layer = [&](const char* suffix, int64_t rows, int64_t cols, const char* what) {
    const float* base = take_f32(L * rows * cols, what);
    for (int64_t l = 0; l < L; ++l) {
      std::vector<int64_t> ne =
          rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
      add("blk." + std::to_string(l) + "." + suffix, base + l * rows * cols, ne, rows * cols);
    }
  };
  add("token_embd.weight", take_f32(vocab * dim, "token embedding"), {dim, vocab}, vocab * dim);
  per_layer("attn_norm.weight", 1, dim, "attention rmsnorm");
  per_layer("attn_q.weight", dim, dim, "wq");
  per_layer("attn_k.weight", kv_dim, dim, "wk");
  per_layer("attn_v.weight", kv_dim, dim, "wv");
  per_layer("attn_output.weight", dim, dim, "wo");
  per_layer("ffn_norm.weight", 1, dim, "ffn rmsnorm");
  per_layer("ffn_gate.weight", hid, dim, "w1");
  per_layer("ffn_down.weight", dim, hid, "w2");
  per_layer("ffn_up.weight", hid, dim, "w3");
  add("output_norm.weight", take_f32(dim, "final rmsnorm"), {dim}, dim);
  take_f32(static_cast<int64_t>(h.seq_len) * head,
           "rope tables");  // two unused tables of seq_len*head/2
  if (!tied) {
    add("output.weight", take_f32(vocab * dim, "classifier"), {dim, vocab}, vocab * dim);
  }
  w.write(opt.output_path);
}

}  // namespace strata
