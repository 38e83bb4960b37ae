// strata::Engine (include/strata/engine.h): the model, its tokenizer, a thread pool and
// an EngineCore behind one handle.
#include "strata/engine.h"

#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/output_processor.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

DType kv_dtype(KvCacheType t) {
  switch (t) {
    case KvCacheType::kF32:
      return DType::F32;
    case KvCacheType::kF16:
      return DType::F16;
    case KvCacheType::kBF16:
      return DType::BF16;
    case KvCacheType::kAuto:
      break;
  }
  return auto_kv_type();
}

}  // namespace

struct Engine::Impl {
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
  ThreadPool pool;
  EngineCore core;

  Impl(std::unique_ptr<Model> m, const EngineOptions& o)
      : model(std::move(m)),
        tokenizer(Tokenizer::from_gguf(model->file())),
        pool(o.threads > 0 ? o.threads : ThreadPool::default_threads()),
        core(*model, pool, config(o, tokenizer)) {}

  static EngineConfig config(const EngineOptions& o, const Tokenizer& tok) {
    EngineConfig c;
    c.context_length = o.context_length;
    c.kv_cache_tokens = o.kv_cache_tokens;
    c.kv_type = kv_dtype(o.kv_type);
    c.prefix_cache = o.prefix_cache;
    c.scheduler.max_seqs = o.max_seqs;
    c.scheduler.max_batch_tokens = o.max_batch_tokens;
    c.scheduler.prefill_chunk = o.prefill_chunk;
    c.eog_tokens = eog_tokens(tok);
    return c;
  }
};

std::unique_ptr<Engine> Engine::create(const EngineOptions& o) {
  if (o.model_path.empty()) throw Error("model_path: must name a GGUF file");
  Model::LoadOptions load;
  load.memory = o.mmap ? Model::WeightMemory::mmap : Model::WeightMemory::huge_pages;
  return std::unique_ptr<Engine>(
      new Engine(std::make_unique<Impl>(Model::load(o.model_path, load), o)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::vector<int32_t> Engine::tokenize(std::string_view text) const {
  return impl_->tokenizer.encode(text, impl_->tokenizer.add_bos(), false);
}

std::string Engine::detokenize(std::span<const int32_t> tokens) const {
  return impl_->tokenizer.decode(tokens);
}

RequestId Engine::add_request(std::vector<int32_t> prompt, const RequestOptions& options) {
  return impl_->core.add_request(std::move(prompt), options);
}

std::span<const RequestOutput> Engine::step() {
  return impl_->core.step();
}
bool Engine::abort(RequestId id) {
  return impl_->core.abort(id);
}
bool Engine::has_work() const {
  return impl_->core.has_work();
}
EngineMetrics Engine::metrics() const {
  return impl_->core.metrics();
}
int64_t Engine::context_length() const {
  return impl_->core.context_length();
}
int64_t Engine::n_vocab() const {
  return impl_->core.model_config().n_vocab;
}

}  // namespace strata
