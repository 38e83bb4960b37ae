#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "engine/engine_trace.h"
#include "strata/engine.h"

namespace strata {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Identity of the loaded model for prefix-cache keys: a hash of its metadata layout
// and tensor table, so two different files never share cached blocks.
uint64_t model_identity(const Model& model) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  for (const auto& t : model.file().tensors()) {
    XXH64_update(st, t.name.data(), t.name.size());
    XXH64_update(st, &t.offset, sizeof t.offset);
    XXH64_update(st, &t.n_bytes, sizeof t.n_bytes);
  }
  const uint64_t size = model.file().file_size();
  XXH64_update(st, &size, sizeof size);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

int64_t pool_tokens(const Model& model, const EngineConfig& c) {
  const auto& mc = model.config();
  // The paged pool holds the full heads only (all heads when attention is dense).
  const int64_t full_heads = c.head_modes.dense() ? mc.n_layers * mc.n_kv_heads
                                                  : std::max<int64_t>(1, c.head_modes.n_full());
  const int64_t bytes_per_token =
      2 * full_heads * mc.head_dim * static_cast<int64_t>(dtype_info(c.kv_type).type_size);
  int64_t tokens = c.kv_cache_tokens;
  if (tokens <= 0 && c.kv_cache_mem > 0) tokens = static_cast<int64_t>(c.kv_cache_mem) / bytes_per_token;
  if (tokens <= 0) {
    // Default: every sequence slot can hold a full context, within 2 GiB.
    const int64_t cap = (int64_t{2} << 30) / bytes_per_token;
    const int64_t ctx = c.context_length > 0 ? c.context_length : mc.context_length;
    tokens = std::min(ctx * c.scheduler.max_seqs, cap);
    tokens = std::max(tokens, std::min(ctx, cap));
  }
  if (tokens < c.block_size) throw Error("kv cache: pool holds fewer tokens than one block");
  return tokens;
}

// Sparse attention's stream pool: every running sequence's sinks and window, the
// blocks one step's prefill chunks span, and as much again to keep released window
// blocks cached for prefix hits. 0 when no head is streaming.
int64_t stream_pool_blocks(const EngineConfig& c) {
  if (c.head_modes.n_streaming() == 0) return 0;
  const int64_t bs = c.block_size;
  const int64_t per_seq = c.head_modes.stream_blocks_per_sequence(bs, 0);
  const int64_t chunks = (c.scheduler.max_batch_tokens + bs - 1) / bs + c.scheduler.max_seqs;
  return 2 * (c.scheduler.max_seqs * per_seq + chunks);
}

// Sparse attention keeps only a window of the streaming heads, so a prompt must be
// prefilled in chunks that fit the stream pool.
EngineConfig normalized(EngineConfig c, const Model& model) {
  c.head_modes = effective_head_modes(c.head_modes, c.head_map, model.config().n_layers, model.config().n_kv_heads);
  if (c.head_modes.n_streaming() > 0 && c.scheduler.prefill_chunk <= 0) {
    c.scheduler.prefill_chunk = c.scheduler.max_batch_tokens;
  }
  return c;
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kNone: break;
  }
  return "";
}

// Engine-side state of a live request (the scheduler owns the SchedRequest).
struct Engine::Live {
  SchedRequest* sched = nullptr;
  RequestOptions options;
  Sampler sampler;
  int32_t n_generated = 0;
  double arrival_s = 0, first_scheduled_s = -1, first_token_s = -1;
  Live(const RequestOptions& o, int64_t n_vocab) : options(o), sampler(o.sampling, n_vocab) {}
};

Engine::Engine(Model& model, ThreadPool& pool, const EngineConfig& config)
    : model_(model),
      pool_(pool),
      config_(normalized(config, model)),
      context_length_(config.context_length > 0 ? config.context_length : model.config().context_length),
      cache_(model.kv_config((pool_tokens(model, config_) + config_.block_size - 1) / config_.block_size,
                             config_.block_size, config_.kv_type, config_.head_modes,
                             stream_pool_blocks(config_))),
      kv_({static_cast<int32_t>(cache_.config().n_blocks), config_.block_size, config_.prefix_cache,
           model_identity(model), static_cast<int32_t>(cache_.config().n_stream_blocks),
           config_.head_modes.sink, config_.head_modes.window}),
      scheduler_(config_.scheduler, kv_) {
  row_.resize(static_cast<size_t>(model.config().n_vocab));
  if (config_.tracer) model_.set_tracer(config_.tracer);
}

Engine::~Engine() = default;

int64_t Engine::kv_capacity_tokens() const { return cache_.config().n_blocks * config_.block_size; }

void Engine::validate(std::span<const int32_t> prompt, const RequestOptions& o) const {
  const int64_t n_vocab = model_.config().n_vocab;
  if (prompt.empty()) throw Error("prompt: must contain at least one token");
  for (int32_t t : prompt) {
    if (t < 0 || t >= n_vocab) throw Error("prompt: token id " + std::to_string(t) + " is outside the vocabulary");
  }
  const int64_t limit = std::min(context_length_, kv_capacity_tokens());
  if (static_cast<int64_t>(prompt.size()) >= limit) {
    throw Error("prompt: " + std::to_string(prompt.size()) + " tokens leave no room to generate within " +
                std::to_string(limit) + " tokens of context");
  }
  if (o.stop.max_tokens < 0) throw Error("max_tokens: must be >= 0");
  if (o.stop.min_tokens < 0) throw Error("min_tokens: must be >= 0");
  if (!(o.sampling.temperature >= 0.0f)) throw Error("temperature: must be >= 0");
  if (!(o.sampling.top_p > 0.0f && o.sampling.top_p <= 1.0f)) throw Error("top_p: must be in (0, 1]");
  if (o.sampling.top_k < 0) throw Error("top_k: must be >= 0");
  if (!(o.sampling.min_p >= 0.0f && o.sampling.min_p <= 1.0f)) throw Error("min_p: must be in [0, 1]");
  if (!(o.sampling.repetition_penalty > 0.0f)) throw Error("repetition_penalty: must be > 0");
  if (o.logprobs > 20) throw Error("logprobs: at most 20");
}

RequestId Engine::add_request(std::vector<int32_t> prompt, const RequestOptions& o) {
  validate(prompt, o);
  const int64_t n_vocab = model_.config().n_vocab;
  auto live = std::make_unique<Live>(o, n_vocab);
  auto req = std::make_unique<SchedRequest>();
  req->id = next_id_++;
  req->priority = o.priority;
  req->arrival = arrivals_++;
  req->n_prompt = static_cast<int32_t>(prompt.size());
  req->tokens = std::move(prompt);
  req->tokens.reserve(req->tokens.size() + static_cast<size_t>(o.stop.max_tokens) + 1);
  req->kv.salt = o.cache_salt;
  live->sched = req.get();
  live->arrival_s = now_s();
  const RequestId id = req->id;
  scheduler_.add(std::move(req));
  live_.emplace(id, std::move(live));
  if (o.stop.max_tokens == 0) abort(id);  // nothing to generate: finishes at the next step
  return id;
}

bool Engine::abort(RequestId id) {
  const auto it = live_.find(id);
  if (it == live_.end()) return false;
  pending_aborts_.push_back(id);
  return true;
}

bool Engine::has_work() const { return scheduler_.has_work() || !pending_aborts_.empty(); }

RequestOutput& Engine::next_output(RequestId id) {
  if (n_outputs_ == outputs_.size()) outputs_.emplace_back();
  RequestOutput& o = outputs_[n_outputs_++];
  o.id = id;
  o.new_tokens.clear();
  o.logprobs.clear();
  o.finish = FinishReason::kNone;
  o.queue_s = o.ttft_s = o.e2e_s = 0;
  return o;
}

void Engine::finish(Live& live, FinishReason reason, RequestOutput& o) {
  const double t = now_s();
  o.finish = reason;
  o.queue_s = live.first_scheduled_s >= 0 ? live.first_scheduled_s - live.arrival_s : t - live.arrival_s;
  o.ttft_s = live.first_token_s >= 0 ? live.first_token_s - live.arrival_s : 0.0;
  o.e2e_s = t - live.arrival_s;
  const RequestId id = live.sched->id;
  scheduler_.remove(id);  // frees the KV blocks now
  live_.erase(id);
}

void Engine::build_batch(const SchedulerOutput& out) {
  tokens_.clear();
  positions_.clear();
  seq_index_.clear();
  logit_rows_.clear();
  views_.clear();
  sampled_slot_.clear();
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const SchedRequest& r = *out.scheduled[i].request;
    const int64_t start = r.n_computed;
    const int64_t end = start + out.scheduled[i].n_tokens;
    for (int64_t p = start; p < end; ++p) {
      tokens_.push_back(r.tokens[static_cast<size_t>(p)]);
      positions_.push_back(static_cast<int32_t>(p));
      seq_index_.push_back(static_cast<int32_t>(i));
    }
    views_.push_back({r.kv.block_table, static_cast<int32_t>(end), r.kv.stream_table});
    // Logits are needed only when this step reaches the sequence's last known token.
    if (end == static_cast<int64_t>(r.tokens.size())) {
      sampled_slot_.push_back(static_cast<int32_t>(logit_rows_.size()));
      logit_rows_.push_back(static_cast<int32_t>(tokens_.size() - 1));
    } else {
      sampled_slot_.push_back(-1);
    }
  }
}

std::span<const RequestOutput> Engine::step() {
  n_outputs_ = 0;
  for (RequestId id : pending_aborts_) {
    const auto it = live_.find(id);
    if (it == live_.end()) continue;
    RequestOutput& o = next_output(id);
    o.n_prompt = it->second->sched->n_prompt;
    o.n_cached_prompt = it->second->sched->n_cached_prompt;
    o.n_generated = it->second->n_generated;
    finish(*it->second, it->second->options.stop.max_tokens == 0 ? FinishReason::kLength : FinishReason::kAbort, o);
  }
  pending_aborts_.clear();

  TraceSpan step_span(config_.tracer, "step", kTraceScheduler);
  TraceSpan span(config_.tracer, "schedule", kTraceScheduler);
  const int64_t hits_before = kv_.prefix_hits(), evictions_before = kv_.evictions();
  const SchedulerOutput out = scheduler_.schedule();
  if (config_.tracer) {
    trace_schedule(*config_.tracer, out, step_span, span, kv_.prefix_hits() - hits_before,
                   kv_.evictions() - evictions_before);
  }
  if (out.empty()) return {outputs_.data(), n_outputs_};
  ++steps_;
  build_batch(out);
  span.end();
  const double t_sched = now_s();
  const auto logits = model_.forward(ForwardBatch{tokens_, positions_, seq_index_, views_, logit_rows_},
                                     cache_, pool_);
  span.next("sample");
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const int64_t limit = std::min(context_length_, kv_capacity_tokens());

  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    SchedRequest& r = *out.scheduled[i].request;
    Live& live = *live_.at(r.id);
    if (live.first_scheduled_s < 0) live.first_scheduled_s = t_sched;
    if (r.prefilling()) prompt_tokens_total_ += std::min<int64_t>(out.scheduled[i].n_tokens, r.n_prompt - r.n_computed);
    r.n_computed += out.scheduled[i].n_tokens;
    kv_.commit(r.kv, std::span<const int32_t>(r.tokens.data(), static_cast<size_t>(r.n_computed)));
    if (sampled_slot_[i] < 0) continue;

    const float* src = logits.data() + static_cast<size_t>(sampled_slot_[i]) * n_vocab;
    std::copy(src, src + n_vocab, row_.begin());
    const StopConditions& stop = live.options.stop;
    const bool may_stop = !stop.ignore_eos && live.n_generated >= stop.min_tokens;
    if (live.n_generated < stop.min_tokens) {
      for (int32_t t : config_.eog_tokens) row_[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
      for (int32_t t : stop.stop_token_ids) {
        if (t >= 0 && static_cast<size_t>(t) < n_vocab) row_[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
      }
    }
    RequestOutput& o = next_output(r.id);
    if (live.options.logprobs >= 0) {
      // Log-probabilities of the model's distribution, before penalties and temperature.
      double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (size_t v = 0; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(src[v]));
      for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(src[v]) - mx);
      const double log_z = mx + std::log(sum);
      o.logprobs.emplace_back();
      TokenLogprob& lp = o.logprobs.back();
      const auto k = static_cast<size_t>(live.options.logprobs);
      std::vector<int32_t> idx(n_vocab);
      for (size_t v = 0; v < n_vocab; ++v) idx[v] = static_cast<int32_t>(v);
      std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(std::min(k, n_vocab)), idx.end(),
                        [&](int32_t a, int32_t b) { return src[a] > src[b] || (src[a] == src[b] && a < b); });
      for (size_t j = 0; j < std::min(k, n_vocab); ++j) {
        lp.top.emplace_back(idx[j], static_cast<float>(src[idx[j]] - log_z));
      }
      lp.logprob = static_cast<float>(-log_z);  // completed below once the token is known
    }
    const int32_t tok = live.sampler.sample(row_, r.tokens);
    if (live.first_token_s < 0) live.first_token_s = now_s();
    if (!o.logprobs.empty()) {
      o.logprobs.back().token = tok;
      o.logprobs.back().logprob += src[tok];
    }
    o.n_prompt = r.n_prompt;
    o.n_cached_prompt = r.n_cached_prompt;

    const bool is_stop_token =
        std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), tok) != stop.stop_token_ids.end() ||
        std::find(config_.eog_tokens.begin(), config_.eog_tokens.end(), tok) != config_.eog_tokens.end();
    if (is_stop_token && may_stop) {
      o.logprobs.clear();
      o.n_generated = live.n_generated;
      finish(live, FinishReason::kStop, o);
      continue;
    }
    r.tokens.push_back(tok);
    ++live.n_generated;
    ++generation_tokens_total_;
    o.new_tokens.push_back(tok);
    o.n_generated = live.n_generated;
    if (live.n_generated >= stop.max_tokens || static_cast<int64_t>(r.tokens.size()) >= limit) {
      finish(live, FinishReason::kLength, o);
    }
  }
  return {outputs_.data(), n_outputs_};
}

EngineMetrics Engine::metrics() const {
  EngineMetrics m;
  m.running = static_cast<int64_t>(scheduler_.n_running());
  m.waiting = static_cast<int64_t>(scheduler_.n_waiting());
  m.kv = kv_.usage();
  m.prefix_queries_tokens = kv_.prefix_queries();
  m.prefix_hits_tokens = kv_.prefix_hits();
  m.preemptions = scheduler_.n_preemptions();
  m.prompt_tokens_total = prompt_tokens_total_;
  m.generation_tokens_total = generation_tokens_total_;
  m.steps = steps_;
  m.kv_evictions = kv_.evictions();
  m.kv_stream = kv_.stream_usage();
  m.kv_bytes_in_use = static_cast<uint64_t>(m.kv.used) * static_cast<uint64_t>(config_.block_size) *
                          cache_.full_bytes_per_token() +
                      static_cast<uint64_t>(m.kv_stream.used) * static_cast<uint64_t>(config_.block_size) *
                          cache_.stream_bytes_per_token();
  for (const auto& [id, live] : live_) m.kv_context_tokens += live->sched->n_computed;
  return m;
}

}  // namespace strata
