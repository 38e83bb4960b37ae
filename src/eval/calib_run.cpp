#include "eval/calib_run.h"

#include <fstream>
#include <memory>
#include <span>
#include <sstream>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/offline.h"
#include "kernels/quant/interleaved.h"
#include "tokenizer/tokenizer.h"

namespace strata {

CalibWindows calib_windows(const Model& model, const std::string& path, int64_t n_ctx) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--calib: cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw Error("--calib: " + path + " is empty");
  if (n_ctx < 2) throw Error("--calib: -c must be at least 2");
  n_ctx = std::min<int64_t>(n_ctx, model.config().context_length);
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const int32_t bos = tok.add_bos() ? tok.bos_id() : -1;
  const std::vector<int32_t> ids = tok.encode(s.str(), false, false);
  CalibWindows w;
  w.plan = plan_perplexity(static_cast<int64_t>(ids.size()), n_ctx);
  if (w.plan.n_chunks == 0)
    throw Error("--calib: " + path + " has " + std::to_string(ids.size()) +
                " tokens, fewer than one window of " + std::to_string(n_ctx) + " (-c)");
  for (int64_t c = 0; c < w.plan.n_chunks; ++c) {
    std::vector<int32_t> win(ids.begin() + c * n_ctx, ids.begin() + (c + 1) * n_ctx);
    if (bos >= 0) win[0] = bos;
    w.windows.push_back(std::move(win));
  }
  return w;
}

std::vector<float> run_windows(Model& model, const CalibWindows& w, int threads,
                               MatmulObserver* observer) {
  ThreadPool pool(threads);
  EngineConfig c;
  c.context_length = w.plan.n_ctx;
  c.kv_type = DType::F32;
  c.prefix_cache = false;
  c.scheduler.max_seqs = 1;
  c.scheduler.prefill_chunk = w.plan.n_ctx;
  c.scheduler.max_batch_tokens = w.plan.n_ctx;
  EngineCore engine(model, pool, c);
  const size_t v = static_cast<size_t>(model.config().n_vocab);
  const size_t want = static_cast<size_t>(w.plan.scored_per_chunk());
  std::vector<float> out;
  out.reserve(w.windows.size() * want * v);
  std::vector<double> tmp(v);
  model.set_matmul_observer(observer);
  try {
    for (const auto& win : w.windows) {
      RequestOptions o;
      o.stop.max_tokens = 0;
      o.prompt_logits = static_cast<int32_t>(w.plan.n_ctx - w.plan.first);
      const std::vector<float> rows = generate(engine, nullptr, {{"w", win, o}})[0].prompt_logits;
      if (rows.size() < want * v) throw Error("engine returned fewer prompt logits than asked");
      for (size_t r = 0; r < want; ++r) {
        log_softmax(std::span<const float>(rows.data() + r * v, v), tmp);
        for (size_t i = 0; i < v; ++i) out.push_back(static_cast<float>(tmp[i]));
      }
    }
  } catch (...) {
    model.set_matmul_observer(nullptr);
    throw;
  }
  model.set_matmul_observer(nullptr);
  return out;
}

double mean_kld(const std::vector<float>& ref, const std::vector<float>& logp, int64_t n_vocab) {
  const size_t v = static_cast<size_t>(n_vocab);
  if (ref.size() != logp.size() || v == 0 || ref.size() % v != 0)
    throw Error("mean_kld: log-prob arrays of different shapes");
  const size_t rows = ref.size() / v;
  if (rows == 0) return 0;
  std::vector<double> a(v), b(v);
  double sum = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < v; ++i) {
      a[i] = ref[r * v + i];
      b[i] = logp[r * v + i];
    }
    sum += kl_divergence(a, b);
  }
  return sum / static_cast<double>(rows);
}

namespace {

// A model's matrix `slot` (tensor `name` of `src`) rebound to `type` for one probe, restored when
// it ends.
class SwappedMatrix {
 public:
  SwappedMatrix(WeightMatrix& slot, const gguf::GgufFile& src, const std::string& name, DType type,
                const QuantizeOptions& options)
      : slot_(slot), saved_(slot) {
    bytes_ = quantize_tensor(src, name, type, options);
    DType bound = type;
    if (name != "token_embd.weight") {  // matmul alone reads it: the kernels' fast layout
      bound = kernels::repacked_weight_type(type, slot.cols);
      if (bound != type)
        kernels::repack_weight_rows(type, bound, bytes_.data(), slot.rows, slot.cols);
    }
    slot_ = WeightMatrix{bound, bytes_.data(), slot.rows, slot.cols,
                         bytes_.size() / static_cast<size_t>(slot.rows)};
  }
  ~SwappedMatrix() { slot_ = saved_; }
  SwappedMatrix(const SwappedMatrix&) = delete;
  SwappedMatrix& operator=(const SwappedMatrix&) = delete;

 private:
  WeightMatrix& slot_;
  WeightMatrix saved_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

Sensitivity measure_sensitivity(
    Model& model, const gguf::GgufFile& src,
    const std::map<std::string, std::vector<DType>>& candidates, const QuantizeOptions& base,
    const CalibWindows& w, const std::vector<float>& ref, int threads,
    const std::function<void(const std::string&, DType, double)>& progress) {
  Sensitivity out;
  for (const auto& [name, types] : candidates) {
    const auto* info = src.find_tensor(name);
    if (!info) throw Error("sensitivity: the model has no tensor " + name);
    WeightMatrix* slot = model.mutable_matrix(name);
    for (const DType type : types) {
      double kld = 0;
      if (type != info->type) {
        if (slot != nullptr) {
          // Only this tensor differs from the loaded source model: rebind it rather than
          // rebuilding the model (a copy of every weight per probe).
          const SwappedMatrix swap(*slot, src, name, type, base);
          kld = mean_kld(ref, run_windows(model, w, threads), model.config().n_vocab);
        } else {
          QuantizeOptions o = base;
          o.keep_others = true;
          o.tensor_types = {{name, type}};
          auto probe = Model::from_file(
              gguf::GgufFile::from_buffer(quantize_to_buffer(src, o), "probe " + name), true);
          kld = mean_kld(ref, run_windows(*probe, w, threads), probe->config().n_vocab);
        }
      }
      out[name][type] = kld;
      if (progress) progress(name, type, kld);
    }
  }
  return out;
}

}  // namespace strata
