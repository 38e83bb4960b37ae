#include "model/weights.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(gguf::GgufFile& f, bool repack) : f_(f), repack_(repack) {}

  // A matrix that matmul alone reads, so it may be repacked.
  WeightMatrix matmul_matrix(const std::string& name, int64_t rows, int64_t cols) const {
    WeightMatrix m = matrix(name, rows, cols);
    const DType to = kernels::repacked_weight_type(m.type, cols);
    if (!repack_ || to == m.type) return m;
    uint8_t* data = f_.writable_tensor_data(f_.tensor(name));
    if (data == nullptr) return m;
    kernels::repack_weight_rows(m.type, to, data, rows, cols);
    m.type = to;
    return m;
  }

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const auto& t = f_.tensor(name);
    if (t.ne.size() != 2 || t.ne[0] != cols || t.ne[1] != rows) {
      throw Error(f_.name() + ": tensor '" + name + "' has shape " + shape_str(t.ne) +
                  ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + "]");
    }
    kernels::type_traits(t.type);  // throws for types without kernels
    WeightMatrix m;
    m.type = t.type;
    m.data = aligned_data(name, t);
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = static_cast<size_t>(t.n_bytes / static_cast<uint64_t>(rows));
    return m;
  }

  std::vector<float> vector(const std::string& name, int64_t n) const {
    const auto& t = f_.tensor(name);
    if (t.ne.size() != 1 || t.ne[0] != n) {
      throw Error(f_.name() + ": tensor '" + name + "' has shape " + shape_str(t.ne) +
                  ", expected [" + std::to_string(n) + "]");
    }
    std::vector<float> out(static_cast<size_t>(n));
    kernels::type_traits(t.type).to_float(aligned_data(name, t), out.data(), n);
    // Norm weights and biases scale every activation: one NaN would poison every token.
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(out[static_cast<size_t>(i)])) {
        throw Error(f_.name() + ": tensor '" + name + "' holds a non-finite value at index " +
                    std::to_string(i));
      }
    }
    return out;
  }

 private:
  // The kernels read blocks through typed pointers: a tensor at an address its type's
  // block struct cannot sit at (a file with general.alignment = 1, say) is refused here,
  // at load, rather than failing inside the first forward pass.
  const uint8_t* aligned_data(const std::string& name, const gguf::TensorInfo& t) const {
    const uint8_t* data = f_.tensor_data(t);
    const size_t align = kernels::matmul_weight_alignment(t.type);
    if (reinterpret_cast<uintptr_t>(data) % align != 0) {
      throw Error(f_.name() + ": tensor '" + name + "' of type " + std::string(dtype_name(t.type)) +
                  " is at file offset " + std::to_string(f_.data_offset() + t.offset) +
                  ", not aligned to " + std::to_string(align) +
                  " bytes (general.alignment = " + std::to_string(f_.alignment()) + ")");
    }
    return data;
  }

  gguf::GgufFile& f_;
  bool repack_;
};

}  // namespace

ModelWeights load_weights(gguf::GgufFile& f, ModelConfig& c, bool repack) {
  Binder bind(f, repack);
  ModelWeights w;
  const auto& embd = f.tensor("token_embd.weight");
  if (embd.ne.size() != 2 || embd.ne[0] != c.dim) {
    throw Error(f.name() + ": tensor 'token_embd.weight' has shape " + shape_str(embd.ne) +
                ", expected [" + std::to_string(c.dim) + ", n_vocab]");
  }
  c.n_vocab = embd.ne[1];
  w.token_embd = bind.matrix("token_embd.weight", c.n_vocab, c.dim);
  w.output_norm = bind.vector("output_norm.weight", c.dim);
  w.output = f.find_tensor("output.weight") ? bind.matmul_matrix("output.weight", c.n_vocab, c.dim)
                                            : w.token_embd;
  if (f.find_tensor("rope_freqs.weight")) {
    w.rope_freq_factors = bind.vector("rope_freqs.weight", c.rope_dim / 2);
  }

  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = bind.vector(p + "attn_norm.weight", c.dim);
    L.wq = bind.matmul_matrix(p + "attn_q.weight", q_dim, c.dim);
    L.wk = bind.matmul_matrix(p + "attn_k.weight", kv_dim, c.dim);
    L.wv = bind.matmul_matrix(p + "attn_v.weight", kv_dim, c.dim);
    L.wo = bind.matmul_matrix(p + "attn_output.weight", c.dim, q_dim);
    if (c.qkv_bias) {
      L.bq = bind.vector(p + "attn_q.bias", q_dim);
      L.bk = bind.vector(p + "attn_k.bias", kv_dim);
      L.bv = bind.vector(p + "attn_v.bias", kv_dim);
    }
    if (c.qk_norm) {
      L.q_norm = bind.vector(p + "attn_q_norm.weight", c.head_dim);
      L.k_norm = bind.vector(p + "attn_k_norm.weight", c.head_dim);
    }
    L.ffn_norm = bind.vector(p + "ffn_norm.weight", c.dim);
    L.w_gate = bind.matmul_matrix(p + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.w_up = bind.matmul_matrix(p + "ffn_up.weight", c.ffn_dim, c.dim);
    L.w_down = bind.matmul_matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
  }
  return w;
}

}  // namespace strata
