// The constructed retrieval model (see induction_model.h for what it is for).
//
// Notation. D = 160 residual dims, 4 query heads and 2 KV heads of size 32 per layer
// (GQA groups {0,1} -> KV 0 and {2,3} -> KV 1), RoPE on all 32 head dims (16
// interleaved pairs), attention scale 1/sqrt(32). Everything is exact linear algebra on
// one residual stream with these disjoint slices:
//
//   TOK    [  0, 32)  the token's identity code c(t)           (embedding)
//   PREV   [ 32, 64)  c(previous token)                        (layer 0, KV head 0)
//   LOCAL  [ 64, 96)  scratch written by the harmless heads    (read by nothing)
//   ANSWER [ 96,128)  c(token the induction head retrieved)    (layer 1, KV head 0)
//   CONST  128        a constant c0 in every token             (embedding)
//   [129,160)         zero
//
// Identity codes, all of the same norm alpha (alpha^2 = c0^2 = D/2 = 80, so every
// embedding row has norm^2 = D and the first RMSNorm is the identity):
//   - the 100 needle tokens (the K/V candidates "▁00".."▁99") are sign vectors
//     (+-alpha/4) on TOK dims 0..15, taken from the extended Hamming code [16,11,4]:
//     any two differ in >= 4 signs, so their dot is <= alpha^2/2;
//   - every other token is a distinct seeded random sign vector on dims 16..31.
//   So a needle code has dot 0 with every non-needle code. Equal norms matter: RMSNorm
//   would turn a small-norm token into a large normalized vector (an accidental
//   attention sink); here every position is normalized by the same factor.
//
// RoPE pairs. rope_freqs.weight divides each pair's frequency: pairs 0..7 get the
// angular frequencies w_k = (pi/2) / 4^k ("positional pairs", head dims 0..15), pairs
// 8..15 get a factor of 1e30, so their angle pos * ~1e-32 is 0 at every position and
// they are position-free ("content pairs", head dims 16..31).
//
// Positional heads. A query pair rho (cos w, -sin w) against a key pair (kappa, 0)
// scores rho*kappa*cos(w (d - 1)) after RoPE at distance d = p - j; over the 8
// positional pairs S(d) = rho*kappa * sum_k cos((pi/2) (d-1) / 4^k). Write
// m = d - 1 = 4^b * r with r not a multiple of 4 (any 0 < |m| < 4^8 = 65536): the terms
// k < b are cos(2 pi * integer) = 1, the term k = b is cos(r pi/2) in {0, -1}, so
// S(m) <= 7 rho*kappa against S(0) = 8 rho*kappa: a margin of at least rho*kappa for
// every distance up to 65536. With rho*kappa/sqrt(32) = 40 the target p-1 wins by >= 40
// nats over any other position, so 65536 competitors get < 3e-13 of the weight. The
// same key with the query (rho, 0) is a current-token head (m = d). q and k come from
// CONST only, the same for every token: these heads are purely positional.
//
// The induction head (layer 1, KV head 0; query heads 0 and 1 identical) uses only the
// content pairs: q = lambda * TOK[0..16), k = lambda * PREV[0..16), with lambda set so
// that q.k/sqrt(32) = 60 when the previous token is K. Every other position scores
// <= 30 (another needle token: dot <= alpha^2/2) or exactly 0 (filler or BOS: zero
// needle part). So the last token K puts all but ~ctx * e^-60 of its weight on V's
// position, at any distance. Its value is TOK (the token there: V), its output ANSWER.
//
// Output. logits(t) = gamma * <c(t), ANSWER> + beta * [t is a needle token] * c0, after
// the final RMSNorm (a positive per-position scale that does not change the argmax).
// When V was retrieved, V leads every other token by >= gamma * alpha^2 / 2. The small
// needle-set prior beta makes a model that retrieved nothing still answer with a needle
// token (the first one, on an exact tie) rather than a filler: then its accuracy is the
// chance level 1/|candidates|. (With only a local window the induction head sees no
// match, averages the window, and its ANSWER holds mostly K's own code: it answers K,
// which is never right.)
//
// The FFN weights are zero, so the FFN blocks add nothing.
#include "convert/induction_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "convert/spm_vocab.h"
#include "core/error.h"
#include "core/splitmix.h"
#include "kernels/cpu/ops.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

constexpr int64_t kDim = 160;
constexpr int64_t kLayers = 2;
constexpr int64_t kHeads = 4;
constexpr int64_t kKvHeads = 2;
constexpr int64_t kHeadDim = 32;
constexpr int64_t kFfnDim = 32;
constexpr int64_t kPairs = kHeadDim / 2;  // RoPE pairs per head (all head dims rotate)
constexpr int64_t kPosPairs = 8;          // pairs 0..7: w_k = (pi/2) / 4^k
constexpr int64_t kContentDims = 2 * (kPairs - kPosPairs);  // head dims 16..31
constexpr int64_t kCodeDims = 32;
constexpr int64_t kNeedleDims = 16;  // needle codes live on TOK dims 0..15
constexpr int64_t kTok = 0, kPrev = 32, kLocal = 64, kAnswer = 96, kConst = 128;
constexpr float kRopeBase = 10000.0f;
constexpr float kContentFactor = 1e30f;  // rope_freqs factor of the content pairs
constexpr float kRmsEps = 1e-5f;
constexpr double kAlpha2 = kDim / 2.0;       // |c(t)|^2
constexpr double kC0 = 8.94427190999915879;  // sqrt(D/2): the CONST value
constexpr double kPositionalLogit = 40.0;    // rho*kappa/sqrt(head_dim): margin in nats
constexpr double kInductionLogit = 60.0;     // q.k/sqrt(head_dim) at the match
constexpr double kGamma = 0.1;               // readout scale of ANSWER
constexpr double kNeedlePrior = 0.25;        // beta*c0 = 0.25 * gamma * alpha^2
constexpr int64_t kNeedleCount = 100;        // "▁00".."▁99"
static_assert(kContentDims == kNeedleDims,
              "the induction head matches needle codes on content pairs");

// Scale RMSNorm applies to a row of squared norm `norm2` (weights are 1).
double rms_scale(double norm2) {
  return 1.0 / std::sqrt(norm2 / kDim + kRmsEps);
}
// Layer inputs: embedding rows have |x|^2 = alpha^2 + c0^2 = D; after layer 0 the row
// also holds c(prev) in PREV and c(t) in LOCAL: |x|^2 = 3 alpha^2 + c0^2 = 2D.
const double kNorm0 = rms_scale(kDim);
const double kNorm1 = rms_scale(2.0 * kDim);

using Rng = SplitMix64;

// --- Vocabulary: a complete SPM vocabulary so tokenize/run work on it ---------------
// 0 <unk>, 1 <s>, 2 </s>, 3..258 byte tokens, then "▁", a-z, 0-9, "▁a".."▁z",
// "▁0".."▁9" (merge steps), the 676 filler words "▁aa".."▁zz" and the 100 needle words
// "▁00".."▁99". Text " ab 17" tokenizes to [▁ab, ▁17].
struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<int32_t> filler, needle;
};

const Vocab& vocab() {
  static const Vocab v = [] {
    Vocab v;
    const std::string sp = "\xE2\x96\x81";
    auto add = [&](std::string piece, int32_t type) {
      const auto id = static_cast<int32_t>(v.tokens.size());
      v.tokens.push_back(std::move(piece));
      // SPM merges the highest-scoring pair first; every piece is reachable by merging.
      v.scores.push_back(type == kTokenNormal ? -static_cast<float>(id) : 0.0f);
      v.types.push_back(type);
      return id;
    };
    add("<unk>", kTokenUnknown);
    add("<s>", kTokenControl);
    add("</s>", kTokenControl);
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      add(buf, kTokenByte);
    }
    add(sp, kTokenNormal);
    for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c), kTokenNormal);
    for (char c = '0'; c <= '9'; ++c) add(std::string(1, c), kTokenNormal);
    for (char c = 'a'; c <= 'z'; ++c) add(sp + c, kTokenNormal);
    for (char c = '0'; c <= '9'; ++c) add(sp + c, kTokenNormal);
    for (char a = 'a'; a <= 'z'; ++a) {
      for (char b = 'a'; b <= 'z'; ++b) v.filler.push_back(add(sp + a + b, kTokenNormal));
    }
    for (int n = 0; n < kNeedleCount; ++n) {
      v.needle.push_back(add(sp + static_cast<char>('0' + n / 10) + static_cast<char>('0' + n % 10),
                             kTokenNormal));
    }
    return v;
  }();
  return v;
}

// --- Token codes ---------------------------------------------------------------------
// The first kNeedleCount words of the extended Hamming code [16,11,4] in numeric order:
// 16-bit words of even weight whose set bit positions XOR to 0. Any two codewords differ
// in at least 4 bits, so as sign vectors their dot is at most (16 - 2*4)/16 = 1/2 of
// the norm^2.
std::vector<uint32_t> needle_codewords() {
  std::vector<uint32_t> words;
  for (uint32_t w = 0; w < (1u << kNeedleDims) && static_cast<int64_t>(words.size()) < kNeedleCount;
       ++w) {
    uint32_t syndrome = 0;
    for (uint32_t i = 0; i < kNeedleDims; ++i) {
      if ((w >> i) & 1u) syndrome ^= i;
    }
    if (syndrome == 0 && __builtin_popcount(w) % 2 == 0) words.push_back(w);
  }
  if (static_cast<int64_t>(words.size()) != kNeedleCount)
    throw Error("induction model: too few codewords");
  return words;
}

std::vector<float> token_codes(uint64_t seed) {
  const Vocab& v = vocab();
  const auto n_vocab = static_cast<int64_t>(v.tokens.size());
  std::vector<float> codes(static_cast<size_t>(n_vocab * kCodeDims), 0.0f);
  const double alpha = std::sqrt(kAlpha2);
  const int32_t first_needle = v.needle.front();
  Rng rng(seed ^ 0x696E64756374696Full);  // "induction"
  std::set<uint32_t> used;
  const auto needle_words = needle_codewords();
  for (int64_t t = 0; t < n_vocab; ++t) {
    float* c = codes.data() + t * kCodeDims;
    if (t >= first_needle) {
      const uint32_t word = needle_words[static_cast<size_t>(t - first_needle)];
      const double a = alpha / std::sqrt(static_cast<double>(kNeedleDims));
      for (int64_t i = 0; i < kNeedleDims; ++i)
        c[i] = static_cast<float>((word >> i) & 1u ? a : -a);
      continue;
    }
    uint32_t bits = 0;
    do {
      bits = static_cast<uint32_t>(rng.next() >> 48);  // 16 random signs
    } while (!used.insert(bits).second);  // distinct codes, so the readout tells them apart
    const double a = alpha / std::sqrt(static_cast<double>(kCodeDims - kNeedleDims));
    for (int64_t i = 0; i < kCodeDims - kNeedleDims; ++i) {
      c[kNeedleDims + i] = static_cast<float>((bits >> i) & 1u ? a : -a);
    }
  }
  return codes;
}

// --- RoPE ----------------------------------------------------------------------------
double positional_freq(int64_t k) {
  return std::numbers::pi / 2.0 / std::ldexp(1.0, 2 * static_cast<int>(k));
}

std::vector<float> rope_factors() {
  std::vector<float> f(static_cast<size_t>(kPairs));
  for (int64_t k = 0; k < kPairs; ++k) {
    // The model computes w_k = base^(-2k/rope_dim) / factor_k.
    const double base_freq =
        std::pow(static_cast<double>(kRopeBase),
                 -2.0 * static_cast<double>(k) / static_cast<double>(kHeadDim));
    f[static_cast<size_t>(k)] =
        k < kPosPairs ? static_cast<float>(base_freq / positional_freq(k)) : kContentFactor;
  }
  return f;
}

// Pre-RoPE query/key of a positional head for a normalized input, as 64 head dims:
// key pairs (kappa, 0); query pairs rho (cos w_k d0, -sin w_k d0) so that the score
// peaks at distance d0 (1 = previous token, 0 = current token).
std::vector<double> positional_query(int64_t target_distance) {
  std::vector<double> q(static_cast<size_t>(kHeadDim), 0.0);
  const double rho = std::sqrt(std::sqrt(static_cast<double>(kHeadDim)) * kPositionalLogit);
  for (int64_t k = 0; k < kPosPairs; ++k) {
    const double w = positional_freq(k) * static_cast<double>(target_distance);
    q[static_cast<size_t>(2 * k)] = rho * std::cos(w);
    q[static_cast<size_t>(2 * k + 1)] = -rho * std::sin(w);
  }
  return q;
}

std::vector<double> positional_key() {
  std::vector<double> k(static_cast<size_t>(kHeadDim), 0.0);
  const double kappa = std::sqrt(std::sqrt(static_cast<double>(kHeadDim)) * kPositionalLogit);
  for (int64_t i = 0; i < kPosPairs; ++i) k[static_cast<size_t>(2 * i)] = kappa;
  return k;
}

// A row-major rows x cols matrix (GGUF ne = {cols, rows}).
struct Matrix {
  int64_t rows, cols;
  std::vector<float> w;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), w(static_cast<size_t>(r * c), 0.0f) {}
  float& at(int64_t r, int64_t c) { return w[static_cast<size_t>(r * cols + c)]; }
};

// Writes a positional head's q (for `query_heads`) or k (for `kv_head`) from CONST.
// `norm` is the RMSNorm scale of the layer input, so the normalized CONST is c0*norm.
void set_positional_query(Matrix& wq, std::initializer_list<int64_t> query_heads,
                          int64_t target_distance, double norm) {
  const auto q = positional_query(target_distance);
  for (int64_t h : query_heads) {
    for (int64_t i = 0; i < kHeadDim; ++i) {
      wq.at(h * kHeadDim + i, kConst) =
          static_cast<float>(q[static_cast<size_t>(i)] / (kC0 * norm));
    }
  }
}

void set_positional_key(Matrix& wk, int64_t kv_head, double norm) {
  const auto k = positional_key();
  for (int64_t i = 0; i < kHeadDim; ++i) {
    wk.at(kv_head * kHeadDim + i, kConst) =
        static_cast<float>(k[static_cast<size_t>(i)] / (kC0 * norm));
  }
}

// Value of a KV head = the token's code (TOK), un-normalized again.
void set_value_tok(Matrix& wv, int64_t kv_head, double norm) {
  for (int64_t i = 0; i < kCodeDims; ++i)
    wv.at(kv_head * kHeadDim + i, kTok + i) = static_cast<float>(1.0 / norm);
}

// The two query heads of a group each add half of their (identical) output to `slice`.
void set_output(Matrix& wo, std::initializer_list<int64_t> query_heads, int64_t slice) {
  for (int64_t h : query_heads) {
    for (int64_t i = 0; i < kCodeDims; ++i) wo.at(slice + i, h * kHeadDim + i) = 0.5f;
  }
}

std::vector<float> inv_freqs_like_model() {
  // Exactly Model::Model: double pow, divided by the f32 factor, rounded to f32.
  const auto factors = rope_factors();
  std::vector<float> inv(static_cast<size_t>(kPairs));
  for (int64_t i = 0; i < kPairs; ++i) {
    double f = std::pow(static_cast<double>(kRopeBase),
                        -2.0 * static_cast<double>(i) / static_cast<double>(kHeadDim));
    f /= factors[static_cast<size_t>(i)];
    inv[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return inv;
}

// Smallest softmax weight of the target position over the probe query positions, with
// the f32 RoPE of the forward pass (f32 angle pos * inv_freq, f32 cos/sin, kernels::rope).
double positional_min_weight(int64_t ctx, int64_t target_distance, double norm) {
  const auto inv = inv_freqs_like_model();
  const auto qd = positional_query(target_distance);
  const auto kd = positional_key();
  // The f32 vectors the model computes: f32 weight times the normalized f32 CONST.
  const auto c = static_cast<float>(kC0 * norm);
  std::vector<float> q0(static_cast<size_t>(kHeadDim)), k0(static_cast<size_t>(kHeadDim));
  for (int64_t i = 0; i < kHeadDim; ++i) {
    q0[static_cast<size_t>(i)] = static_cast<float>(qd[static_cast<size_t>(i)] / (kC0 * norm)) * c;
    k0[static_cast<size_t>(i)] = static_cast<float>(kd[static_cast<size_t>(i)] / (kC0 * norm)) * c;
  }
  auto rotated = [&](const std::vector<float>& v, int64_t pos) {
    std::vector<float> cs(static_cast<size_t>(kPairs)), sn(static_cast<size_t>(kPairs));
    for (int64_t i = 0; i < kPairs; ++i) {
      const float theta = static_cast<float>(pos) * inv[static_cast<size_t>(i)];
      cs[static_cast<size_t>(i)] = std::cos(theta);
      sn[static_cast<size_t>(i)] = std::sin(theta);
    }
    std::vector<float> out = v;
    kernels::rope(out.data(), 1, kHeadDim, kHeadDim, cs.data(), sn.data(), false);
    return out;
  };
  std::vector<std::vector<float>> keys(static_cast<size_t>(ctx));
  for (int64_t j = 0; j < ctx; ++j) keys[static_cast<size_t>(j)] = rotated(k0, j);
  double worst = 1.0;
  // p = ctx - 1 sees every distance; the others vary the absolute positions (rounding).
  for (int64_t p : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{64}, int64_t{1000}, int64_t{4097},
                    int64_t{16384}, int64_t{16385}, int64_t{32769}, ctx / 2, ctx - 2, ctx - 1}) {
    if (p < target_distance || p >= ctx) continue;
    const auto q = rotated(q0, p);
    std::vector<double> logits(static_cast<size_t>(p + 1));
    double max_logit = -1e300;
    for (int64_t j = 0; j <= p; ++j) {
      float dot = 0.0f;
      for (int64_t i = 0; i < kHeadDim; ++i)
        dot += q[static_cast<size_t>(i)] * keys[static_cast<size_t>(j)][static_cast<size_t>(i)];
      logits[static_cast<size_t>(j)] =
          static_cast<double>(dot) / std::sqrt(static_cast<double>(kHeadDim));
      max_logit = std::max(max_logit, logits[static_cast<size_t>(j)]);
    }
    double sum = 0.0;
    for (double l : logits) sum += std::exp(l - max_logit);
    const double target =
        std::exp(logits[static_cast<size_t>(p - target_distance)] - max_logit) / sum;
    worst = std::min(worst, target);
  }
  return worst;
}

void add_f32(gguf::GgufWriter& w, const std::string& name, const std::vector<float>& v) {
  w.add_tensor(name, DType::F32, {static_cast<int64_t>(v.size())}, v.data(),
               v.size() * sizeof(float));
}

void add_matrix(gguf::GgufWriter& w, const std::string& name, const Matrix& m, DType type) {
  if (type == DType::F32) {
    w.add_tensor(name, type, {m.cols, m.rows}, m.w.data(), m.w.size() * sizeof(float));
    return;
  }
  const auto& traits = kernels::type_traits(type);
  const auto& info = dtype_info(type);
  const size_t row_bytes = static_cast<size_t>(m.cols / info.block_size) * info.type_size;
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(m.rows));
  for (int64_t r = 0; r < m.rows; ++r) {
    traits.from_float(m.w.data() + r * m.cols, bytes.data() + static_cast<size_t>(r) * row_bytes,
                      m.cols);
  }
  w.add_tensor(name, type, {m.cols, m.rows}, bytes.data(), bytes.size());
}

}  // namespace

const InductionModelInfo& induction_model_info() {
  static const InductionModelInfo info = [] {
    InductionModelInfo i;
    i.n_layers = kLayers;
    i.n_heads = kHeads;
    i.n_kv_heads = kKvHeads;
    i.head_dim = kHeadDim;
    i.n_vocab = static_cast<int64_t>(vocab().tokens.size());
    i.retrieval_layer = 1;
    i.retrieval_kv_head = 0;
    i.head_roles = {"previous-token", "current-token", "induction", "previous-token"};
    i.needle_tokens = vocab().needle;
    i.filler_tokens = vocab().filler;
    i.bos = 1;
    return i;
  }();
  return info;
}

double induction_positional_min_weight(int64_t context_length) {
  return std::min({positional_min_weight(context_length, 1, kNorm0),
                   positional_min_weight(context_length, 0, kNorm0),
                   positional_min_weight(context_length, 1, kNorm1)});
}

gguf::GgufWriter build_induction_model(const InductionModelOptions& opt) {
  if (opt.type != DType::F32 && opt.type != DType::F16) {
    throw Error("make-model --preset induction: --type must be f32 or f16 (hand-set weights)");
  }
  const int64_t ctx = opt.context_length > 0 ? opt.context_length : kInductionMaxContext;
  if (ctx < 8 || ctx > kInductionMaxContext) {
    throw Error("make-model --preset induction: --ctx must be in 8.." +
                std::to_string(kInductionMaxContext) +
                " (the positional heads resolve distances up to 4^8)");
  }
  const int64_t dim = opt.dim > 0 ? opt.dim : kDim;
  if (dim < kDim || dim > (1 << 16) || dim % 32 != 0)
    throw Error("induction model: dim must be a multiple of 32 in 160..65536");
  const double weight = induction_positional_min_weight(ctx);
  if (!(weight > 1.0 - 1e-6)) {
    throw Error("induction model: positional heads are not sharp (min weight " +
                std::to_string(weight) + ")");
  }

  const Vocab& v = vocab();
  const InductionModelInfo& info = induction_model_info();
  const int64_t n_vocab = info.n_vocab;

  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "strata-induction");
  w.set_u32("general.file_type", opt.type == DType::F32 ? 0 : 1);
  w.set_u32("llama.context_length", static_cast<uint32_t>(ctx));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(dim));
  if (opt.pad_layers < 0 || opt.pad_layers > 1024 || opt.ffn_dim < 0 || opt.ffn_dim > (1 << 24) ||
      opt.ffn_dim % 256 != 0)
    throw Error("induction model: pad_layers must be in 0..1024, ffn_dim a multiple of 256");
  const int64_t n_layers = kLayers + opt.pad_layers;
  const int64_t ffn_dim = opt.ffn_dim > 0 ? opt.ffn_dim : kFfnDim;
  const DType ffn_type = opt.ffn_dim > 0 ? opt.pad_type : opt.type;
  w.set_u32("llama.block_count", static_cast<uint32_t>(n_layers));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(ffn_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(kHeads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(kKvHeads));
  // Heads of 32 with a 160-wide residual: the head size is not dim / n_heads (40).
  w.set_u32("llama.attention.key_length", static_cast<uint32_t>(kHeadDim));
  w.set_u32("llama.attention.value_length", static_cast<uint32_t>(kHeadDim));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(kHeadDim));
  w.set_f32("llama.rope.freq_base", kRopeBase);
  // rms over `dim` values of which 160 are non-zero is sqrt(160/dim) times rms over the
  // 160; this epsilon and the norm weights below undo exactly that.
  const double narrow = static_cast<double>(kDim) / static_cast<double>(dim);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(kRmsEps * narrow));
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(n_vocab));
  write_spm_vocabulary(w, v.tokens, v.scores, v.types);
  // Ground truth: index layer * n_kv_heads + kv_head.
  w.set_i32_array(kInductionRetrievalHeadsKey,
                  {static_cast<int32_t>(info.retrieval_layer * kKvHeads + info.retrieval_kv_head)});
  w.set_string_array(kInductionHeadRolesKey, info.head_roles);
  w.set_i32_array(kInductionNeedleTokensKey, info.needle_tokens);
  w.set_i32_array(kInductionFillerTokensKey, info.filler_tokens);

  // Embedding: c(t) on TOK, c0 on CONST.
  const auto codes = token_codes(opt.seed);
  Matrix embd(n_vocab, kDim);
  for (int64_t t = 0; t < n_vocab; ++t) {
    for (int64_t i = 0; i < kCodeDims; ++i) {
      embd.at(t, kTok + i) = codes[static_cast<size_t>(t * kCodeDims + i)];
    }
    embd.at(t, kConst) = static_cast<float>(kC0);
  }
  // Every matrix dimension that is the residual's becomes `dim` wide (zeros beyond 160).
  const auto add = [&](const std::string& name, const Matrix& m, DType type) {
    if (dim == kDim) return add_matrix(w, name, m, type);
    Matrix wide(m.rows == kDim ? dim : m.rows, m.cols == kDim ? dim : m.cols);
    for (int64_t r = 0; r < m.rows; ++r)
      std::copy(m.w.begin() + r * m.cols, m.w.begin() + (r + 1) * m.cols,
                wide.w.begin() + r * wide.cols);
    add_matrix(w, name, wide, type);
  };
  add("token_embd.weight", embd, opt.type);
  add_f32(w, "rope_freqs.weight", rope_factors());

  const std::vector<float> ones(static_cast<size_t>(dim), static_cast<float>(std::sqrt(narrow)));
  for (int64_t l = 0; l < kLayers; ++l) {
    Matrix wq(kHeads * kHeadDim, kDim), wk(kKvHeads * kHeadDim, kDim),
        wv(kKvHeads * kHeadDim, kDim);
    Matrix wo(kDim, kHeads * kHeadDim);
    if (l == 0) {
      // KV head 0, query heads 0-1: previous-token head. Its value is c(t) at p-1, which
      // it writes to PREV: after layer 0 every position holds c(previous token).
      set_positional_query(wq, {0, 1}, 1, kNorm0);
      set_positional_key(wk, 0, kNorm0);
      set_value_tok(wv, 0, kNorm0);
      set_output(wo, {0, 1}, kPrev);
      // KV head 1, query heads 2-3: current-token head, output to LOCAL (unread). It
      // adds alpha^2 to every row's squared norm, the same everywhere.
      set_positional_query(wq, {2, 3}, 0, kNorm0);
      set_positional_key(wk, 1, kNorm0);
      set_value_tok(wv, 1, kNorm0);
      set_output(wo, {2, 3}, kLocal);
    } else {
      // KV head 0, query heads 0-1: the induction head, on the content pairs only
      // (head dims 16..31): q = lambda * needle part of c(t) from TOK, k = lambda *
      // needle part of c(previous token) from PREV.
      // q.k = lambda^2 * |c(K)|^2 * norm1^2 at the match (norm1^2 = 1/2).
      const double lambda = std::sqrt(kInductionLogit * std::sqrt(static_cast<double>(kHeadDim)) /
                                      (kAlpha2 * kNorm1 * kNorm1));
      for (int64_t i = 0; i < kNeedleDims; ++i) {
        for (int64_t h : {0, 1}) {
          wq.at(h * kHeadDim + (kHeadDim - kContentDims) + i, kTok + i) =
              static_cast<float>(lambda);
        }
        wk.at(0 * kHeadDim + (kHeadDim - kContentDims) + i, kPrev + i) = static_cast<float>(lambda);
      }
      set_value_tok(wv, 0, kNorm1);
      set_output(wo, {0, 1}, kAnswer);
      // KV head 1, query heads 2-3: another previous-token head, output to LOCAL.
      set_positional_query(wq, {2, 3}, 1, kNorm1);
      set_positional_key(wk, 1, kNorm1);
      set_value_tok(wv, 1, kNorm1);
      set_output(wo, {2, 3}, kLocal);
    }
    const std::string b = "blk." + std::to_string(l) + ".";
    add_f32(w, b + "attn_norm.weight", ones);
    add(b + "attn_q.weight", wq, opt.type);
    add(b + "attn_k.weight", wk, opt.type);
    add(b + "attn_v.weight", wv, opt.type);
    add(b + "attn_output.weight", wo, opt.type);
    add_f32(w, b + "ffn_norm.weight", ones);
    // The FFN is zero in the circuit: only attention moves information.
    add(b + "ffn_gate.weight", Matrix(ffn_dim, kDim), ffn_type);
    add(b + "ffn_up.weight", Matrix(ffn_dim, kDim), ffn_type);
    add(b + "ffn_down.weight", Matrix(kDim, ffn_dim), ffn_type);
  }
  // Padding layers: zero output projections, so the residual passes through unchanged.
  for (int64_t l = kLayers; l < n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_f32(w, b + "attn_norm.weight", ones);
    add(b + "attn_q.weight", Matrix(kHeads * kHeadDim, kDim), opt.pad_type);
    add(b + "attn_k.weight", Matrix(kKvHeads * kHeadDim, kDim), opt.pad_type);
    add(b + "attn_v.weight", Matrix(kKvHeads * kHeadDim, kDim), opt.pad_type);
    add(b + "attn_output.weight", Matrix(kDim, kHeads * kHeadDim), opt.pad_type);
    add_f32(w, b + "ffn_norm.weight", ones);
    add(b + "ffn_gate.weight", Matrix(ffn_dim, kDim), ffn_type);
    add(b + "ffn_up.weight", Matrix(ffn_dim, kDim), ffn_type);
    add(b + "ffn_down.weight", Matrix(kDim, ffn_dim), ffn_type);
  }
  add_f32(w, "output_norm.weight", ones);

  // Readout: gamma * c(t) . ANSWER, plus the needle-set prior on CONST.
  Matrix out(n_vocab, kDim);
  const double beta = kNeedlePrior * kGamma * kAlpha2 / kC0;
  for (int64_t t = 0; t < n_vocab; ++t) {
    for (int64_t i = 0; i < kCodeDims; ++i) {
      out.at(t, kAnswer + i) =
          static_cast<float>(kGamma * codes[static_cast<size_t>(t * kCodeDims + i)]);
    }
  }
  for (int32_t t : v.needle) out.at(t, kConst) = static_cast<float>(beta);
  add("output.weight", out, opt.type);
  return w;
}

void make_induction_model(const InductionModelOptions& opt) {
  if (opt.output_path.empty()) throw Error("make-model: no output path");
  build_induction_model(opt).write(opt.output_path);
}

std::string induction_head_map_json(int64_t sink, int64_t window) {
  const InductionModelInfo& info = induction_model_info();
  std::string modes = "[", scores = "[";
  for (int64_t l = 0; l < info.n_layers; ++l) {
    modes += l ? ", [" : "[";
    scores += l ? ", [" : "[";
    for (int64_t h = 0; h < info.n_kv_heads; ++h) {
      const bool retrieval = l == info.retrieval_layer && h == info.retrieval_kv_head;
      modes += std::string(h ? ", " : "") + (retrieval ? "\"full\"" : "\"streaming\"");
      scores += std::string(h ? ", " : "") + (retrieval ? "1.0" : "0.0");
    }
    modes += "]";
    scores += "]";
  }
  return "{\"sink\": " + std::to_string(sink) + ", \"window\": " + std::to_string(window) +
         ", \"modes\": " + modes + "], \"scores\": " + scores + "]}\n";
}

}  // namespace strata
