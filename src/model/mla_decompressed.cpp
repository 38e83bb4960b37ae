#include "model/mla_decompressed.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/tile_layout.h"

namespace strata {

namespace {

// Positions per chunk: the expanded keys and values of a chunk stay in L2.
constexpr int64_t kChunk = 256;

struct Dims {
  int64_t H, L, R, nope, v, qk;
};

Dims dims_of(const ModelConfig& c) {
  return {c.n_heads,         c.mla.kv_lora_rank, c.rope_dim,
          c.mla.qk_nope_dim, c.mla.v_head_dim,   c.mla.qk_nope_dim + c.rope_dim};
}

// One thread's chunk buffers for a sequence of n batch tokens.
int64_t per_thread_floats(const Dims& d, int64_t n) {
  return kChunk * (d.L + d.R + d.qk) + d.v * kChunk + n * kChunk + n * d.v;
}

// Rows [p0, p0 + n) of a sequence's latent cache as row-major floats: c (n, L), pe (n, R).
void gather_rows(const KvCache& cache, int64_t layer, const SequenceView& seq, int64_t p0,
                 int64_t n, const Dims& d, float* c, float* pe) {
  const auto& cc = cache.config();
  const int64_t bs = cc.block_size;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = p0 + i;
    const int32_t block = seq.block_table[static_cast<size_t>(p / bs)];
    const int64_t slot = p % bs;
    const uint8_t* tile = cache.k_tile(layer, block, 0);
    float* dst_c = c + i * d.L;
    float* dst_pe = pe + i * d.R;
    for (int64_t k = 0; k < d.L + d.R; ++k) {
      float x;
      switch (cc.dtype) {
        case DType::F32:
          x = reinterpret_cast<const float*>(tile)[kv_layout::key_index(k, slot, bs)];
          break;
        case DType::F16:
          x = fp16_to_fp32(
              reinterpret_cast<const uint16_t*>(tile)[kv_layout::key_index(k, slot, bs)]);
          break;
        default:
          x = bf16_to_fp32(
              reinterpret_cast<const uint16_t*>(tile)[kv_layout::bf16_key_index(k, slot, bs)]);
      }
      if (k < d.L)
        dst_c[k] = x;
      else
        dst_pe[k - d.L] = x;
    }
  }
}

}  // namespace

void MlaDecompressed::prepare(const ModelConfig& c, const std::vector<LayerWeights>& layers) {
  const Dims d = dims_of(c);
  kb_t_.assign(layers.size(), {});
  vb_.assign(layers.size(), {});
  std::vector<float> row(static_cast<size_t>(std::max(d.L, d.nope)));
  for (size_t l = 0; l < layers.size(); ++l) {
    const MlaWeights& w = layers[l].mla;
    const auto& kt = kernels::reference_type_traits(w.k_b.type);
    const auto& vt = kernels::reference_type_traits(w.v_b.type);
    auto& kb = kb_t_[l];
    auto& vb = vb_[l];
    kb.resize(static_cast<size_t>(d.H * d.nope * d.L));
    vb.resize(static_cast<size_t>(d.H * d.v * d.L));
    for (int64_t h = 0; h < d.H; ++h) {
      // k_b^h: L rows of nope; stored transposed so a key is one gemm of the latent rows.
      for (int64_t r = 0; r < d.L; ++r) {
        kt.to_float(w.k_b.matrix_data(h) + static_cast<size_t>(r) * w.k_b.row_bytes, row.data(),
                    d.nope);
        for (int64_t j = 0; j < d.nope; ++j)
          kb[static_cast<size_t>((h * d.nope + j) * d.L + r)] = row[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < d.v; ++j) {
        vt.to_float(w.v_b.matrix_data(h) + static_cast<size_t>(j) * w.v_b.row_bytes,
                    vb.data() + (h * d.v + j) * d.L, d.L);
      }
    }
  }
}

void MlaDecompressed::reserve(const ModelConfig& c, int64_t n, int n_threads) {
  if (n <= capacity_ && n_threads <= capacity_threads_) return;
  n = std::max(n, capacity_);
  n_threads = std::max(n_threads, capacity_threads_);
  const Dims d = dims_of(c);
  const auto nh = static_cast<size_t>(n * d.H);
  q_.resize(std::max(q_.size(), nh * static_cast<size_t>(d.qk)));
  m_.resize(std::max(m_.size(), nh));
  l_.resize(std::max(l_.size(), nh));
  o_.resize(std::max(o_.size(), nh * static_cast<size_t>(d.v)));
  thread_.resize(
      std::max(thread_.size(), static_cast<size_t>(per_thread_floats(d, n) * n_threads)));
  tokens_.reserve(static_cast<size_t>(n));
  capacity_ = n;
  capacity_threads_ = n_threads;
}

void MlaDecompressed::attend(const ModelConfig& c, int64_t layer, const ForwardBatch& b,
                             int32_t seq_i, const KvCache& cache, float scale, const float* q,
                             float* values, ThreadPool& pool) {
  if (!prepared()) throw Error("mla: decompressed attention used before prepare()");
  const Dims d = dims_of(c);
  const SequenceView& seq = b.seqs[static_cast<size_t>(seq_i)];
  tokens_.clear();
  int64_t max_pos = -1;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    if (b.seq_index[static_cast<size_t>(t)] != seq_i) continue;
    tokens_.push_back(static_cast<int32_t>(t));
    max_pos = std::max<int64_t>(max_pos, b.positions[static_cast<size_t>(t)]);
  }
  const auto n = static_cast<int64_t>(tokens_.size());
  if (n == 0) return;
  const auto nh = static_cast<size_t>(n * d.H);
  reserve(c, n, pool.size());
  q_.resize(nh * static_cast<size_t>(d.qk));
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(q + tokens_[static_cast<size_t>(i)] * d.H * d.qk, d.H * d.qk,
                q_.data() + i * d.H * d.qk);
  m_.assign(nh, -std::numeric_limits<float>::infinity());
  l_.assign(nh, 0.0f);
  o_.assign(nh * static_cast<size_t>(d.v), 0.0f);
  const int64_t per_thread = per_thread_floats(d, n);
  thread_.resize(static_cast<size_t>(per_thread * pool.size()));
  const auto& f32 = kernels::type_traits(DType::F32);
  const float* kb_all = kb_t_[static_cast<size_t>(layer)].data();
  const float* vb_all = vb_[static_cast<size_t>(layer)].data();
  constexpr int64_t F = sizeof(float);

  pool.run([&](int tid, int nt) {
    const int64_t h0 = d.H * tid / nt, h1 = d.H * (tid + 1) / nt;
    if (h0 == h1) return;
    float* cbuf = thread_.data() + tid * per_thread;
    float* pe = cbuf + kChunk * d.L;
    float* kfull = pe + kChunk * d.R;
    float* vt = kfull + kChunk * d.qk;
    float* s = vt + d.v * kChunk;
    float* ot = s + n * kChunk;
    for (int64_t p0 = 0; p0 <= max_pos; p0 += kChunk) {
      const int64_t np = std::min(kChunk, max_pos + 1 - p0);
      gather_rows(cache, layer, seq, p0, np, d, cbuf, pe);
      for (int64_t h = h0; h < h1; ++h) {
        // Keys [W_kb^h c_j, k_pe_j] and values (W_vb^h c_j), transposed: vt[j][p].
        f32.gemm(d.L, kb_all + h * d.nope * d.L, d.L * F, d.nope, cbuf, d.L * F, np, kfull, d.qk);
        for (int64_t p = 0; p < np; ++p) std::copy_n(pe + p * d.R, d.R, kfull + p * d.qk + d.nope);
        f32.gemm(d.L, cbuf, d.L * F, np, vb_all + h * d.v * d.L, d.L * F, d.v, vt, np);
        f32.gemm(d.qk, kfull, d.qk * F, np, q_.data() + h * d.qk, d.H * d.qk * F, n, s, np);
        for (int64_t i = 0; i < n; ++i) {
          float* row = s + i * np;
          const int64_t valid = std::min<int64_t>(
              np, b.positions[static_cast<size_t>(tokens_[static_cast<size_t>(i)])] - p0 + 1);
          if (valid <= 0) {
            std::fill(row, row + np, 0.0f);
            continue;
          }
          const auto sh = static_cast<size_t>(i * d.H + h);
          float mx = m_[sh];
          for (int64_t p = 0; p < valid; ++p) mx = std::max(mx, row[p] * scale);
          const float alpha = std::exp(m_[sh] - mx);
          float sum = 0.0f;
          for (int64_t p = 0; p < valid; ++p) {
            row[p] = std::exp(row[p] * scale - mx);
            sum += row[p];
          }
          std::fill(row + valid, row + np, 0.0f);
          m_[sh] = mx;
          l_[sh] = l_[sh] * alpha + sum;
          float* o = o_.data() + sh * static_cast<size_t>(d.v);
          for (int64_t j = 0; j < d.v; ++j) o[j] *= alpha;
        }
        f32.gemm(np, vt, np * F, d.v, s, np * F, n, ot, d.v);
        for (int64_t i = 0; i < n; ++i) {
          float* o = o_.data() + static_cast<size_t>(i * d.H + h) * static_cast<size_t>(d.v);
          for (int64_t j = 0; j < d.v; ++j) o[j] += ot[i * d.v + j];
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = h0; h < h1; ++h) {
        const auto sh = static_cast<size_t>(i * d.H + h);
        const float inv = 1.0f / l_[sh];
        float* dst = values + (tokens_[static_cast<size_t>(i)] * d.H + h) * d.v;
        for (int64_t j = 0; j < d.v; ++j) dst[j] = o_[sh * static_cast<size_t>(d.v) + j] * inv;
      }
    }
  });
}

}  // namespace strata
