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

  // A 3-D tensor [cols, rows, n] (GGUF order) used only by matmul; `what_n` names the
  // metadata key its third dimension must equal, for the error.
  WeightStack stack(const std::string& name, int64_t n, int64_t rows, int64_t cols,
                    const std::string& what_n) const {
    const auto& t = f_.tensor(name);
    if (t.ne.size() != 3 || t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != n) {
      throw Error(f_.name() + ": tensor '" + name + "' has shape " + shape_str(t.ne) +
                  ", expected [" + std::to_string(cols) + ", " + std::to_string(rows) + ", " +
                  std::to_string(n) + "] (" + what_n + ")");
    }
    kernels::type_traits(t.type);  // throws for types without kernels
    WeightStack s;
    s.type = t.type;
    s.data = aligned_data(name, t);
    s.n = n;
    s.rows = rows;
    s.cols = cols;
    s.row_bytes = static_cast<size_t>(t.n_bytes / static_cast<uint64_t>(rows * n));
    // The interleaved layouts rearrange blocks within a row, so the n*rows rows of a stack
    // repack as one matrix and each matrix stays at data + i * matrix_bytes.
    const DType to = kernels::repacked_weight_type(s.type, cols);
    if (!repack_ || to == s.type) return s;
    uint8_t* data = f_.writable_tensor_data(t);
    if (data == nullptr) return s;
    kernels::repack_weight_rows(s.type, to, data, rows * n, cols);
    s.type = to;
    return s;
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

// A dense FFN, or a MoE layer's router, experts and shared expert.
void bind_ffn(const gguf::GgufFile& f, const Binder& bind, const ModelConfig& c, int64_t layer,
              const std::string& p, LayerWeights& L) {
  const MoeConfig& m = c.moe;
  if (!m.layer_is_moe(layer)) {
    L.w_gate = bind.matmul_matrix(p + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.w_up = bind.matmul_matrix(p + "ffn_up.weight", c.ffn_dim, c.dim);
    L.w_down = bind.matmul_matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
    return;
  }
  MoeWeights& e = L.moe;
  const std::string count = c.arch + ".expert_count = " + std::to_string(m.n_experts);
  e.router = bind.matrix(p + "ffn_gate_inp.weight", m.n_experts, c.dim);
  if (f.find_tensor(p + "exp_probs_b.bias")) {
    e.router_bias = bind.vector(p + "exp_probs_b.bias", m.n_experts);
  }
  e.gate = bind.stack(p + "ffn_gate_exps.weight", m.n_experts, m.expert_ffn_dim, c.dim, count);
  e.up = bind.stack(p + "ffn_up_exps.weight", m.n_experts, m.expert_ffn_dim, c.dim, count);
  e.down = bind.stack(p + "ffn_down_exps.weight", m.n_experts, c.dim, m.expert_ffn_dim, count);
  if (m.shared_ffn_dim > 0) {
    e.shared_gate = bind.matmul_matrix(p + "ffn_gate_shexp.weight", m.shared_ffn_dim, c.dim);
    e.shared_up = bind.matmul_matrix(p + "ffn_up_shexp.weight", m.shared_ffn_dim, c.dim);
    e.shared_down = bind.matmul_matrix(p + "ffn_down_shexp.weight", c.dim, m.shared_ffn_dim);
    if (m.shared_expert_gate)
      e.shared_gate_inp = bind.vector(p + "ffn_gate_inp_shexp.weight", c.dim);
  }
}

// k_b / v_b from a legacy fused attn_kv_b ([kv_lora_rank, n_heads*(nope+v)]: per head, nope
// rows of k_nope then v rows of value, each a combination of the latent): k_b needs the
// transpose of the head's k rows (latent query = k_rows^T q_nope), so both are copied to
// f32 in the split layout.
void split_kv_b(const gguf::GgufFile& f, const ModelConfig& c, const std::string& name,
                MlaWeights& a, std::vector<std::vector<float>>& owned) {
  const MlaConfig& m = c.mla;
  const auto& t = f.tensor(name);
  const int64_t per_head = m.qk_nope_dim + m.v_head_dim;
  if (t.ne.size() != 2 || t.ne[0] != m.kv_lora_rank || t.ne[1] != c.n_heads * per_head) {
    throw Error(f.name() + ": tensor '" + name + "' has shape " + shape_str(t.ne) + ", expected [" +
                std::to_string(m.kv_lora_rank) + ", " + std::to_string(c.n_heads * per_head) +
                "] (kv_lora_rank, n_heads*(nope+v))");
  }
  const auto& traits = kernels::type_traits(t.type);
  const int64_t L = m.kv_lora_rank;
  const size_t row_bytes = static_cast<size_t>(t.n_bytes / static_cast<uint64_t>(t.ne[1]));
  std::vector<float> row(static_cast<size_t>(L));
  std::vector<float> kb(static_cast<size_t>(c.n_heads * L * m.qk_nope_dim));
  std::vector<float> vb(static_cast<size_t>(c.n_heads * m.v_head_dim * L));
  for (int64_t h = 0; h < c.n_heads; ++h) {
    for (int64_t d = 0; d < per_head; ++d) {
      traits.to_float(f.tensor_data(t) + static_cast<size_t>(h * per_head + d) * row_bytes,
                      row.data(), L);
      for (int64_t r = 0; r < L; ++r) {
        const float x = row[static_cast<size_t>(r)];
        if (d < m.qk_nope_dim)
          kb[static_cast<size_t>((h * L + r) * m.qk_nope_dim + d)] = x;
        else
          vb[static_cast<size_t>((h * m.v_head_dim + d - m.qk_nope_dim) * L + r)] = x;
      }
    }
  }
  owned.push_back(std::move(kb));
  owned.push_back(std::move(vb));
  const auto f32_stack = [&](const std::vector<float>& v, int64_t rows, int64_t cols) {
    return WeightStack{DType::F32, v.data(), c.n_heads,
                       rows,       cols,     static_cast<size_t>(cols) * sizeof(float)};
  };
  a.k_b = f32_stack(owned[owned.size() - 2], L, m.qk_nope_dim);
  a.v_b = f32_stack(owned.back(), m.v_head_dim, L);
}

void bind_mla(const gguf::GgufFile& f, const Binder& bind, const ModelConfig& c,
              const std::string& p, LayerWeights& L, std::vector<std::vector<float>>& owned) {
  const MlaConfig& m = c.mla;
  MlaWeights& a = L.mla;
  const int64_t q_rows = c.n_heads * (m.qk_nope_dim + c.rope_dim);
  if (m.q_lora_rank > 0) {
    a.wq_a = bind.matmul_matrix(p + "attn_q_a.weight", m.q_lora_rank, c.dim);
    a.q_a_norm = bind.vector(p + "attn_q_a_norm.weight", m.q_lora_rank);
    a.wq_b = bind.matmul_matrix(p + "attn_q_b.weight", q_rows, m.q_lora_rank);
  } else {
    L.wq = bind.matmul_matrix(p + "attn_q.weight", q_rows, c.dim);
  }
  a.wkv_a = bind.matmul_matrix(p + "attn_kv_a_mqa.weight", m.kv_lora_rank + c.rope_dim, c.dim);
  a.kv_a_norm = bind.vector(p + "attn_kv_a_norm.weight", m.kv_lora_rank);
  if (m.split_kv_b) {
    const std::string heads = c.arch + ".attention.head_count = " + std::to_string(c.n_heads);
    a.k_b = bind.stack(p + "attn_k_b.weight", c.n_heads, m.kv_lora_rank, m.qk_nope_dim, heads);
    a.v_b = bind.stack(p + "attn_v_b.weight", c.n_heads, m.v_head_dim, m.kv_lora_rank, heads);
  } else {
    split_kv_b(f, c, p + "attn_kv_b.weight", a, owned);
  }
  L.wo = bind.matmul_matrix(p + "attn_output.weight", c.dim, c.n_heads * m.v_head_dim);
}

}  // namespace

WeightMatrix* find_matrix(ModelWeights& w, const ModelConfig& c, const std::string& name) {
  const bool tied = w.output.data == w.token_embd.data;
  if (name == "token_embd.weight") return tied ? nullptr : &w.token_embd;
  if (name == "output.weight") return tied ? nullptr : &w.output;
  if (c.mla.enabled() || name.rfind("blk.", 0) != 0) return nullptr;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return nullptr;
  int64_t layer = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || layer > c.n_layers) return nullptr;
    layer = layer * 10 + (name[i] - '0');
  }
  if (layer >= c.n_layers || c.moe.layer_is_moe(layer)) return nullptr;
  LayerWeights& L = w.layers[static_cast<size_t>(layer)];
  const std::string rest = name.substr(dot + 1);
  WeightMatrix* m = rest == "attn_q.weight"        ? &L.wq
                    : rest == "attn_k.weight"      ? &L.wk
                    : rest == "attn_v.weight"      ? &L.wv
                    : rest == "attn_output.weight" ? &L.wo
                    : rest == "ffn_gate.weight"    ? &L.w_gate
                    : rest == "ffn_up.weight"      ? &L.w_up
                    : rest == "ffn_down.weight"    ? &L.w_down
                                                   : nullptr;
  return m != nullptr && m->rows > 0 ? m : nullptr;
}

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
    if (c.mla.enabled()) {
      bind_mla(f, bind, c, p, L, w.owned);
      L.ffn_norm = bind.vector(p + "ffn_norm.weight", c.dim);
      bind_ffn(f, bind, c, l, p, L);
      continue;
    }
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
    bind_ffn(f, bind, c, l, p, L);
  }
  return w;
}

}  // namespace strata
