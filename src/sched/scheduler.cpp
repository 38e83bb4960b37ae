#include "sched/scheduler.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"
#include "sample/logprobs.h"

namespace strata {

RequestOutput& StepOutputs::add(RequestId id) {
  if (n_ == outputs_.size()) outputs_.emplace_back();
  RequestOutput& o = outputs_[n_++];
  o.id = id;
  o.new_tokens.clear();
  o.logprobs.clear();
  o.prompt_logits.clear();
  o.prompt_logprobs.clear();
  o.finish = FinishReason::kNone;
  o.error.clear();
  o.n_prompt = o.n_cached_prompt = o.n_generated = 0;
  o.queue_s = o.ttft_s = o.e2e_s = 0;
  return o;
}

Scheduler::Scheduler(const SchedulerConfig& config, KvManager& kv) : config_(config), kv_(kv) {
  if (config.max_seqs <= 0) throw Error("scheduler: max_seqs must be positive");
  if (config.max_batch_tokens <= 0) throw Error("scheduler: max_batch_tokens must be positive");
  if (config.prefill_chunk < 0) throw Error("scheduler: prefill_chunk must be >= 0");
}

bool Scheduler::runs_before(const Request& a, const Request& b) const {
  if (config_.policy == SchedulePolicy::kPriority && a.priority() != b.priority()) {
    return a.priority() < b.priority();
  }
  return a.arrival < b.arrival;
}

void Scheduler::insert_waiting(Request* r) {
  r->status = RequestStatus::kWaiting;
  auto pos =
      std::upper_bound(waiting_.begin(), waiting_.end(), r,
                       [&](const Request* a, const Request* b) { return runs_before(*a, *b); });
  waiting_.insert(pos, r);
}

void Scheduler::add(std::unique_ptr<Request> request) {
  if (request->tokens.empty()) throw Error("scheduler: request without tokens");
  if (owned_.count(request->id) != 0)
    throw Error("scheduler: duplicate request id " + std::to_string(request->id));
  Request* r = request.get();
  r->arrival = arrivals_++;
  owned_.emplace(r->id, std::move(request));
  insert_waiting(r);
}

Request* Scheduler::find(RequestId id) {
  const auto it = owned_.find(id);
  return it == owned_.end() ? nullptr : it->second.get();
}

bool Scheduler::remove(RequestId id) {
  const auto it = owned_.find(id);
  if (it == owned_.end()) return false;
  Request* r = it->second.get();
  kv_.free(r->kv);
  running_.erase(std::remove(running_.begin(), running_.end(), r), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), r), waiting_.end());
  owned_.erase(it);
  return true;
}

int64_t Scheduler::kv_context_tokens() const {
  int64_t n = 0;
  for (const auto& [id, r] : owned_) n += r->n_computed;
  return n;
}

Request* Scheduler::pick_victim() const {
  Request* victim = nullptr;
  for (Request* r : running_) {
    if (!victim || runs_before(*victim, *r)) victim = r;
  }
  return victim;
}

void Scheduler::preempt(Request* victim, SchedulerOutput& out) {
  // Recompute-style preemption: the victim drops its blocks (full ones stay in the
  // prefix cache, so its recompute is often cheap) and keeps its generated tokens.
  kv_.free(victim->kv);
  victim->n_computed = 0;
  victim->prefix_matched = false;
  victim->prompt_logits.clear();  // recomputed with the prompt
  victim->prompt_logprobs.clear();
  ++victim->n_preemptions;
  ++stats_.preemptions;
  running_.erase(std::remove(running_.begin(), running_.end(), victim), running_.end());
  insert_waiting(victim);
  out.preempted.push_back(victim->id);
}

int64_t Scheduler::spec_room(const Request& r, int64_t budget_left) const {
  // Draft tokens past the last one the request may generate, or past the context, are
  // never kept.
  int64_t room = std::min<int64_t>(budget_left, r.options.stop.max_tokens - r.n_generated - 1);
  if (config_.max_model_len > 0)
    room = std::min(room, config_.max_model_len - static_cast<int64_t>(r.tokens.size()));
  return std::max<int64_t>(0, room);
}

int64_t Scheduler::chunk_limit() const {
  return config_.prefill_chunk > 0 ? config_.prefill_chunk : std::numeric_limits<int64_t>::max();
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_batch_tokens;

  // Stage 1: running requests, decodes first, then unfinished prefills, each in policy order.
  std::vector<Request*> order = running_;
  std::stable_sort(order.begin(), order.end(), [&](const Request* a, const Request* b) {
    const bool da = a->n_pending() == 1, db = b->n_pending() == 1;
    if (da != db) return da;
    return runs_before(*a, *b);
  });
  for (Request* r : order) {
    if (r->status != RequestStatus::kRunning || budget <= 0) continue;
    int64_t n = std::min(r->n_pending(), chunk_limit());
    if (n > budget) {
      // Chunked: take what fits. Unchunked: a prompt runs whole, so it waits for a step
      // with room, or runs alone over the budget when nothing else is scheduled.
      if (config_.prefill_chunk > 0) {
        n = budget;
      } else if (!out.scheduled.empty()) {
        continue;
      }
    }
    // Speculation: room for the draft, within the budget and the limits, if its KV fits;
    // otherwise the request decodes plain.
    r->spec_k = r->decoding() ? std::clamp<int64_t>(r->spec_k, 0, spec_room(*r, budget - n)) : 0;
    if (r->spec_k > 0 && !kv_.allocate(r->kv, r->n_computed + n + r->spec_k)) r->spec_k = 0;
    bool self_preempted = false;
    while (!kv_.allocate(r->kv, r->n_computed + n)) {
      Request* victim = pick_victim();
      preempt(victim, out);
      if (victim == r) {
        self_preempted = true;
        break;
      }
      // A victim scheduled earlier in this step gives its tokens back.
      const auto it = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                                   [&](const ScheduledRequest& s) { return s.request == victim; });
      if (it != out.scheduled.end()) {
        budget += it->n_tokens;
        it->request->spec_k = 0;
        out.scheduled.erase(it);
      }
    }
    if (self_preempted) {
      r->spec_k = 0;
      continue;
    }
    n += r->spec_k;
    out.scheduled.push_back({r, static_cast<int32_t>(n)});
    budget -= n;
  }

  // Stage 2: admit waiting requests while budget, sequence slots and KV allow. Nothing
  // is admitted in a step that had to preempt, so freed blocks are not immediately
  // taken by a newcomer while the preempted request waits.
  while (out.preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.max_seqs) {
    Request* r = waiting_.front();
    if (!r->prefix_matched) {
      // A request that wants its prompt's logits computes those positions.
      r->n_computed =
          kv_.match_prefix(r->kv, r->tokens, r->started() ? INT64_MAX : r->prompt_logits_from());
      if (r->n_preemptions == 0) r->n_cached_prompt = static_cast<int32_t>(r->n_computed);
      r->prefix_matched = true;
    }
    int64_t n = std::min(r->n_pending(), chunk_limit());
    if (n > budget) {
      if (config_.prefill_chunk > 0) {
        n = budget;
      } else if (!out.scheduled.empty()) {
        break;
      }
    }
    if (!kv_.allocate(r->kv, r->n_computed + n)) {
      // Does not fit now: give the matched blocks back so they stay evictable.
      kv_.free(r->kv);
      r->n_computed = 0;
      r->prefix_matched = false;
      break;
    }
    waiting_.pop_front();
    r->spec_k = 0;
    r->status = RequestStatus::kRunning;
    running_.push_back(r);
    out.scheduled.push_back({r, static_cast<int32_t>(n)});
    budget -= n;
  }
  for (const auto& s : out.scheduled) {
    (s.request->n_pending() == 1 ? out.n_decode_tokens : out.n_prefill_tokens) += s.n_tokens;
  }
  return out;
}

bool Scheduler::is_stop_token(const Request& r, int32_t token) const {
  const auto& ids = r.options.stop.stop_token_ids;
  return std::find(ids.begin(), ids.end(), token) != ids.end() ||
         std::find(config_.eog_tokens.begin(), config_.eog_tokens.end(), token) !=
             config_.eog_tokens.end();
}

void Scheduler::update_from_output(const SchedulerOutput& plan, const RunnerOutput& result,
                                   StepOutputs& outputs) {
  if (result.n_entries() != plan.scheduled.size() ||
      result.token_begin.size() != plan.scheduled.size() + 1)
    throw Error("scheduler: runner output does not match the plan");
  const auto n_vocab = static_cast<size_t>(result.n_vocab);
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    Request& r = *plan.scheduled[i].request;
    const int64_t n_tokens = plan.scheduled[i].n_tokens;
    const auto produced = result.produced(i);
    const int64_t n_drafted = result.n_drafted[i];
    if (r.first_scheduled_s < 0) r.first_scheduled_s = result.started_s;
    if (r.prefilling())
      stats_.prompt_tokens += std::min<int64_t>(n_tokens, r.n_prompt - r.n_computed);
    if (i < result.prompt_rows.size() && result.prompt_rows[i].n_rows > 0) {
      const auto rows =
          result.logits.subspan(static_cast<size_t>(result.prompt_rows[i].first_row) * n_vocab,
                                static_cast<size_t>(result.prompt_rows[i].n_rows) * n_vocab);
      if (r.options.prompt_logprobs >= 0) {
        const int64_t first_pos = std::max(r.n_computed, r.prompt_logits_from());
        score_prompt_rows(
            rows, result.n_vocab, first_pos,
            std::span<const int32_t>(r.tokens.data(), static_cast<size_t>(r.n_prompt)),
            r.options.prompt_logprobs, logprob_order_, r.prompt_logprobs);
      } else {
        r.prompt_logits.insert(r.prompt_logits.end(), rows.begin(), rows.end());
      }
    }
    // A speculative step keeps the KV of the accepted draft tokens (all produced tokens
    // but the last, which is new) and rolls back the rejected ones' slots.
    int64_t n_accepted = 0;
    if (n_drafted > 0) {
      if (produced.empty() || static_cast<int64_t>(produced.size()) > n_drafted + 1 ||
          n_tokens != n_drafted + 1 || static_cast<int64_t>(r.draft.size()) != n_drafted)
        throw Error("scheduler: speculative output does not match the draft");
      n_accepted = static_cast<int64_t>(produced.size()) - 1;
      r.spec.drafted += n_drafted;
      r.spec.accepted += n_accepted;
      stats_.spec_drafted += n_drafted;
      stats_.spec_accepted += n_accepted;
      ++stats_.spec_steps;
      r.n_computed += 1 + n_accepted;
      kv_.truncate(r.kv, r.n_computed);
    } else {
      if (!r.draft.empty()) throw Error("scheduler: a draft was not verified");
      r.n_computed += n_tokens;
      if (produced.size() > 1) throw Error("scheduler: several tokens without a draft");
      if (!produced.empty() && !r.prefilling()) ++stats_.plain_steps;
    }
    r.draft.clear();
    r.draft_probs.clear();
    r.spec_k = 0;
    if (produced.empty()) {
      kv_.commit(r.kv,
                 std::span<const int32_t>(r.tokens.data(), static_cast<size_t>(r.n_computed)));
      continue;
    }
    // Accepted draft tokens become known tokens first, so the commit below registers
    // the blocks they complete.
    const size_t base = r.tokens.size();
    for (size_t j = 0; j + 1 < produced.size(); ++j) r.tokens.push_back(produced[j]);
    kv_.commit(r.kv, std::span<const int32_t>(r.tokens.data(), static_cast<size_t>(r.n_computed)));
    r.tokens.resize(base);

    if (r.first_token_s < 0) r.first_token_s = result.finished_s;
    RequestOutput& o = outputs.add(r.id);
    o.n_prompt = r.n_prompt;
    o.n_cached_prompt = r.n_cached_prompt;
    if (!r.prompt_logits.empty()) o.prompt_logits.swap(r.prompt_logits);
    if (!r.prompt_logprobs.empty()) o.prompt_logprobs.swap(r.prompt_logprobs);
    const StopConditions& stop = r.options.stop;
    if (stop.max_tokens == 0) {  // only the prompt's logits were asked for
      finish(r, FinishReason::kLength, o, result.finished_s);
      continue;
    }
    const auto first_lp = static_cast<size_t>(result.token_begin[i]);
    for (size_t j = 0; j < produced.size(); ++j) {
      const int32_t tok = produced[j];
      const bool may_stop = !stop.ignore_eos && r.n_generated >= stop.min_tokens;
      if (may_stop && is_stop_token(r, tok)) {
        o.n_generated = r.n_generated;
        finish(r, FinishReason::kStop, o, result.finished_s);
        break;
      }
      if (r.options.logprobs >= 0) o.logprobs.push_back(result.logprobs[first_lp + j]);
      r.tokens.push_back(tok);
      if (r.constraint) r.constraint->advance(tok);
      ++r.n_generated;
      ++stats_.generation_tokens;
      o.new_tokens.push_back(tok);
      o.n_generated = r.n_generated;
      // The newest token is never written to the KV cache unless the request goes on, so
      // a request may hold one token more than the context: it stops when the next step
      // would not fit.
      const bool at_limit = config_.max_model_len > 0 &&
                            static_cast<int64_t>(r.tokens.size()) > config_.max_model_len;
      if (r.n_generated >= stop.max_tokens || at_limit) {
        finish(r, FinishReason::kLength, o, result.finished_s);
        break;
      }
    }
  }
}

void Scheduler::finish(Request& r, FinishReason reason, RequestOutput& o, double now_s) {
  o.finish = reason;
  o.queue_s = (r.first_scheduled_s >= 0 ? r.first_scheduled_s : now_s) - r.arrival_s;
  o.ttft_s = r.first_token_s >= 0 ? r.first_token_s - r.arrival_s : 0.0;
  o.e2e_s = now_s - r.arrival_s;
  remove(r.id);  // frees the KV blocks now
}

bool Scheduler::finish(RequestId id, FinishReason reason, StepOutputs& outputs, double now_s) {
  Request* r = find(id);
  if (!r) return false;
  RequestOutput& o = outputs.add(id);
  o.n_prompt = r->n_prompt;
  o.n_cached_prompt = r->n_cached_prompt;
  o.n_generated = r->n_generated;
  finish(*r, reason, o, now_s);
  return true;
}

}  // namespace strata
