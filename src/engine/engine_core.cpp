#include "engine/engine_core.h"

#include <xxhash.h>

#include <algorithm>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "engine/engine_trace.h"
#include "engine/request_validation.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"
#include "spec/draft_model_proposer.h"
#include "spec/early_exit_proposer.h"
#include "spec/ngram_proposer.h"

namespace strata {
namespace {

int64_t pool_tokens(const Model& model, const EngineConfig& c) {
  const auto& mc = model.config();
  // The paged pool holds the full heads only (all heads when attention is dense; MLA's
  // one latent row per layer, which the model's own figure counts).
  // A head's K (or V) row in bytes: quantized types carry their scales (kv/kv_quant.h).
  const auto row = static_cast<int64_t>(kv_quant::row_bytes(c.kv_type, mc.head_dim));
  const auto element = static_cast<int64_t>(dtype_info(c.kv_type).type_size);
  const int64_t bytes_per_token =
      !c.head_modes.dense() ? 2 * std::max<int64_t>(1, c.head_modes.n_full()) * row
      : kv_quant::quantized(c.kv_type)
          ? 2 * mc.n_layers * mc.n_kv_heads * row  // MLA is rejected by KvCache
          : static_cast<int64_t>(model.kv_bytes_per_token(static_cast<size_t>(element)));
  int64_t tokens = c.kv_cache_tokens;
  if (tokens <= 0 && c.kv_cache_mem > 0)
    tokens = static_cast<int64_t>(c.kv_cache_mem) / bytes_per_token;
  if (tokens <= 0) {
    // Default: every sequence slot can hold a full context, within 2 GiB.
    const int64_t cap = (int64_t{2} << 30) / bytes_per_token;
    tokens = std::min(c.context_length * c.scheduler.max_seqs, cap);
    tokens = std::max(tokens, std::min(c.context_length, cap));
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

// Neither a token nor the prompt's logits: such a request finishes (length) unscheduled.
bool asks_nothing(const RequestOptions& o) {
  return o.stop.max_tokens == 0 && o.prompt_logits == 0 && o.prompt_logprobs < 0;
}

}  // namespace

// Identity of the loaded model for prefix-cache keys: a hash of its metadata layout
// and tensor table, so two different files never share cached blocks.
uint64_t model_identity(const gguf::GgufFile& file) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  for (const auto& t : file.tensors()) {
    XXH64_update(st, t.name.data(), t.name.size());
    XXH64_update(st, &t.offset, sizeof t.offset);
    XXH64_update(st, &t.n_bytes, sizeof t.n_bytes);
  }
  const uint64_t size = file.file_size();
  XXH64_update(st, &size, sizeof size);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

DType auto_kv_type() {
  return kernels::cpu_has_avx512_bf16() ? DType::BF16 : DType::F16;
}

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kNone:
      break;
  }
  return "";
}

EngineConfig resolved(EngineConfig c, const Model& model) {
  const int64_t model_ctx = model.config().context_length;
  if (c.context_length <= 0) c.context_length = model_ctx;
  // Sparse attention keeps only a window of the streaming heads, so a prompt must be
  // prefilled in chunks that fit the stream pool.
  if (c.head_modes.n_streaming() > 0 && c.scheduler.prefill_chunk <= 0) {
    c.scheduler.prefill_chunk = c.scheduler.max_batch_tokens;
  }
  c.scheduler.eog_tokens = c.eog_tokens;
  const int64_t n_blocks = (pool_tokens(model, c) + c.block_size - 1) / c.block_size;
  c.scheduler.max_model_len = std::min(c.context_length, n_blocks * c.block_size);
  return c;
}

KvPlan plan_kv(const Model& model, const EngineConfig& config) {
  const EngineConfig c = resolved(config, model);
  KvPlan p;
  const int64_t n_blocks = (pool_tokens(model, c) + c.block_size - 1) / c.block_size;
  p.cache = model.kv_config(n_blocks, c.block_size, c.kv_type, c.head_modes, stream_pool_blocks(c));
  p.manager = {static_cast<int32_t>(p.cache.n_blocks),
               c.block_size,
               c.prefix_cache,
               model_identity(model.file()),
               static_cast<int32_t>(p.cache.n_stream_blocks),
               c.head_modes.sink,
               c.head_modes.window};
  return p;
}

EngineCore::EngineCore(Model& model, ThreadPool& pool, const EngineConfig& config)
    : model_(model),
      config_(resolved(config, model)),
      plan_(plan_kv(model, config_)),
      kv_capacity_tokens_(plan_.cache.n_blocks * config_.block_size),
      runner_(model, pool, plan_.cache, config_.eog_tokens),
      kv_(plan_.manager),
      scheduler_(config_.scheduler, kv_) {
  if (config_.tracer) model_.set_tracer(config_.tracer);
  if (config_.kv_prefault == KvPrefault::kAll) {
    runner_.cache().populate(-1);
  } else if (config_.kv_prefault == KvPrefault::kFirstBatch) {
    const int64_t batch = config_.scheduler.max_batch_tokens;
    runner_.cache().populate((batch + config_.block_size - 1) / config_.block_size);
  }
  // One prefill chunk's buffers now: their first touch cost the first request ~75-185 ms
  // of its time to first token (a 1B model, 512 tokens). A larger batch grows them later.
  const SchedulerConfig& sc = config_.scheduler;
  model_.reserve_batch(
      sc.prefill_chunk > 0 ? std::min(sc.prefill_chunk, sc.max_batch_tokens) : sc.max_batch_tokens,
      1, pool.size(), config_.block_size);
  const SpecConfig& spec = config_.spec;
  switch (spec.method) {
    case SpecMethod::kNone:
      break;
    case SpecMethod::kNgram:
      proposer_ = std::make_unique<NgramProposer>(spec.ngram_min, spec.ngram_max);
      break;
    case SpecMethod::kEarlyExit: {
      const int32_t layers =
          spec.draft_layers > 0
              ? spec.draft_layers
              : std::max<int32_t>(1, static_cast<int32_t>(model.config().n_layers / 4));
      proposer_ = std::make_unique<EarlyExitProposer>(model, pool, runner_.cache(), layers);
      break;
    }
    case SpecMethod::kDraftModel: {
      if (!config_.draft_model) throw Error("spec: --spec draft needs --draft-model");
      DraftModelConfig dc;
      dc.kv_tokens = kv_capacity_tokens_;
      dc.block_size = config_.block_size;
      dc.kv_type = config_.kv_type;
      proposer_ = std::make_unique<DraftModelProposer>(*config_.draft_model, model, pool, dc);
      break;
    }
  }
  if (proposer_)
    controller_ = std::make_unique<SpecController>(spec, config_.scheduler.max_batch_tokens);
}

void EngineCore::validate(std::span<const int32_t> prompt, const RequestOptions& o) const {
  validate_request(prompt, o, model_.config().n_vocab, config_.scheduler.max_model_len);
}

RequestId EngineCore::add_request(std::vector<int32_t> prompt, const RequestOptions& o) {
  validate(prompt, o);
  const RequestId id = next_id_++;
  auto r = std::make_unique<Request>(id, std::move(prompt), o, model_.config().n_vocab);
  r->arrival_s = steady_now_s();
  scheduler_.add(std::move(r));
  // Nothing to compute or generate: finishes (length) at the next step.
  if (asks_nothing(o)) abort(id);
  return id;
}

bool EngineCore::abort(RequestId id) {
  if (!scheduler_.find(id)) return false;
  pending_aborts_.push_back(id);
  return true;
}

bool EngineCore::has_work() const {
  return scheduler_.has_work() || !pending_aborts_.empty();
}

std::span<const RequestOutput> EngineCore::step() {
  outputs_.clear();
  for (RequestId id : pending_aborts_) {
    const Request* r = scheduler_.find(id);
    if (!r) continue;
    scheduler_.finish(id, asks_nothing(r->options) ? FinishReason::kLength : FinishReason::kAbort,
                      outputs_, steady_now_s());
  }
  pending_aborts_.clear();

  TraceSpan step_span(config_.tracer, "step", kTraceScheduler);
  TraceSpan span(config_.tracer, "schedule", kTraceScheduler);
  const int64_t hits_before = kv_.prefix_hits(), evictions_before = kv_.evictions();
  if (proposer_) plan_speculation();
  SchedulerOutput plan = scheduler_.schedule();
  if (config_.tracer) {
    trace_schedule(*config_.tracer, plan, step_span, span, kv_.prefix_hits() - hits_before,
                   kv_.evictions() - evictions_before);
  }
  if (plan.empty()) return outputs_.view();
  ++steps_;
  span.end();
  const RunnerOutput* result = nullptr;
  try {
    if (proposer_) propose(plan);
    result = &runner_.execute(plan);
  } catch (const std::exception& e) {
    fail_batch(plan, e.what());
    return outputs_.view();
  }
  if (proposer_) after_step(plan, *result);
  TraceSpan update_span(config_.tracer, "update", kTraceScheduler);
  scheduler_.update_from_output(plan, *result, outputs_);
  if (proposer_) {
    for (const RequestOutput& o : outputs_.view()) {
      if (o.finish != FinishReason::kNone) proposer_->release(o.id);
    }
  }
  return outputs_.view();
}

void EngineCore::plan_speculation() {
  spec_requests_.clear();
  for (Request* r : scheduler_.running()) {
    if (r->decoding()) spec_requests_.push_back(r);
  }
  controller_->plan(spec_requests_);
}

void EngineCore::propose(SchedulerOutput& plan) {
  spec_requests_.clear();
  draft_passes_ = 0;
  for (const auto& s : plan.scheduled) {
    if (s.request->spec_k > 0) {
      spec_requests_.push_back(s.request);
      draft_passes_ = std::max(draft_passes_, s.request->spec_k);
    }
  }
  draft_s_ = 0;
  if (spec_requests_.empty()) return;
  TraceSpan span(config_.tracer, "draft", kTraceScheduler);
  const double t0 = steady_now_s();
  proposer_->propose(spec_requests_);
  draft_s_ = steady_now_s() - t0;
  for (auto& s : plan.scheduled) {
    Request& r = *s.request;
    if (r.spec_k == 0) continue;
    if (static_cast<int32_t>(r.draft.size()) > r.spec_k)
      throw Error("spec: the proposer drafted more tokens than there is room for");
    const auto n = static_cast<int32_t>(r.n_pending() + static_cast<int64_t>(r.draft.size()));
    plan.n_decode_tokens += n - s.n_tokens;
    s.n_tokens = n;
  }
}

void EngineCore::after_step(const SchedulerOutput& plan, const RunnerOutput& result) {
  controller_->observe_draft(static_cast<int64_t>(spec_requests_.size()), draft_passes_, draft_s_);
  controller_->observe_step(plan.n_tokens(), plan.n_prefill_tokens == 0,
                            result.finished_s - result.started_s);
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    if (result.n_drafted[i] > 0) {
      controller_->observe_acceptance(*plan.scheduled[i].request, result.n_drafted[i],
                                      static_cast<int64_t>(result.produced(i).size()) - 1);
    }
  }
}

// A failed forward pass has changed nothing the scheduler relies on: requests advance
// (n_computed, committed blocks, prefix-cache registration) only in update_from_output.
// Ending the batch's requests frees their blocks, KV slots the pass may have half written
// included, so the other requests and the cache stay valid and the engine goes on.
void EngineCore::fail_batch(const SchedulerOutput& plan, const std::string& what) {
  ++step_failures_;
  const double now = steady_now_s();
  for (const auto& s : plan.scheduled) {
    const RequestId id = s.request->id;
    if (scheduler_.finish(id, FinishReason::kError, outputs_, now))
      outputs_.last().error = "the forward pass failed: " + what;
  }
}

EngineMetrics EngineCore::metrics() const {
  EngineMetrics m;
  m.running = static_cast<int64_t>(scheduler_.n_running());
  m.waiting = static_cast<int64_t>(scheduler_.n_waiting());
  m.kv = kv_.usage();
  m.prefix_queries_tokens = kv_.prefix_queries();
  m.prefix_hits_tokens = kv_.prefix_hits();
  m.preemptions = scheduler_.n_preemptions();
  m.prompt_tokens_total = scheduler_.stats().prompt_tokens;
  m.generation_tokens_total = scheduler_.stats().generation_tokens;
  m.steps = steps_;
  m.step_failures = step_failures_;
  m.kv_evictions = kv_.evictions();
  m.kv_stream = kv_.stream_usage();
  const auto bs = static_cast<uint64_t>(config_.block_size);
  m.kv_bytes_in_use =
      static_cast<uint64_t>(m.kv.used) * bs * runner_.cache().full_bytes_per_token() +
      static_cast<uint64_t>(m.kv_stream.used) * bs * runner_.cache().stream_bytes_per_token();
  m.kv_context_tokens = scheduler_.kv_context_tokens();
  m.spec_drafted_tokens = scheduler_.stats().spec_drafted;
  m.spec_accepted_tokens = scheduler_.stats().spec_accepted;
  m.spec_decode_steps = scheduler_.stats().spec_steps;
  m.plain_decode_steps = scheduler_.stats().plain_steps;
  m.moe_expert_load_imbalance = runner_.model().expert_load().max_imbalance();
  return m;
}

}  // namespace strata
