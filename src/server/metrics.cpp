#include "server/metrics.h"

#include <algorithm>
#include <charconv>

namespace strata::server {
namespace {

void append_number(std::string& out, double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_number(std::string& out, uint64_t v) {
  out += std::to_string(v);
}
void append_number(std::string& out, int64_t v) {
  out += std::to_string(v);
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

template <class T>
void sample(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            T value) {
  header(out, name, type, help);
  out.append(name).append(" ");
  append_number(out, value);
  out += "\n";
}

// Latency buckets: fine at the low end, where a CPU engine with small models lives,
// and wide enough for long generations.
std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.25,  0.5,  0.75,
          1.0,   2.5,    5.0,   7.5,  10.0,  20.0, 40.0,  80.0, 160.0, 640.0};
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out.append(name).append("_bucket{le=\"");
    if (i < bounds_.size()) {
      append_number(out, bounds_[i]);
    } else {
      out += "+Inf";
    }
    out += "\"} ";
    append_number(out, cumulative);
    out += "\n";
  }
  out.append(name).append("_sum ");
  append_number(out, sum_);
  out.append("\n").append(name).append("_count ");
  append_number(out, count_);
  out += "\n";
}

ServerMetrics::ServerMetrics()
    : time_to_first_token(latency_buckets()),
      inter_token_latency({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                           0.3, 0.4, 0.5, 0.75, 1.0, 2.5}),
      e2e_request_latency(latency_buckets()),
      request_queue_time(latency_buckets()),
      kv_transfer_seconds(latency_buckets()),
      finishes_{{"abort", 0}, {"length", 0}, {"stop", 0}} {}

void ServerMetrics::count_kv_transfer(uint64_t bytes, uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  kv_bytes_ += bytes;
  kv_blocks_sent_ += blocks;
}

void ServerMetrics::count_kv_decision(bool transfer) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++(transfer ? kv_transfers_ : kv_recomputes_);
}

void ServerMetrics::count_kv_send_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++kv_send_failures_;
}

void ServerMetrics::count_kv_import(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  kv_blocks_imported_ += blocks;
}

void ServerMetrics::set_kv_import_rejections(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  kv_import_rejections_ = n;
}

void ServerMetrics::count_finish(FinishReason reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finishes_[std::string(finish_reason_name(reason))];
}

void ServerMetrics::count_error(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++errors_[status];
}

std::string ServerMetrics::render(const EngineMetrics& m) const {
  std::string out;
  out.reserve(8192);
  const struct {
    const Histogram& h;
    const char* name;
    const char* help;
  } histograms[] = {
      {time_to_first_token, "strata:time_to_first_token_seconds",
       "Time from request arrival to the first token."},
      {inter_token_latency, "strata:inter_token_latency_seconds",
       "Time between consecutive generated tokens."},
      {e2e_request_latency, "strata:e2e_request_latency_seconds",
       "Time from request arrival to its end."},
      {request_queue_time, "strata:request_queue_time_seconds",
       "Time a request waited before it was scheduled."},
      {kv_transfer_seconds, "strata:kv_transfer_seconds",
       "Prefill replica: time to encode, send and have a KV message imported."},
  };
  for (const auto& h : histograms) {
    header(out, h.name, "histogram", h.help);
    h.h.render(out, h.name);
  }
  sample(out, "strata:num_requests_running", "gauge", "Sequences the engine is running.",
         m.running);
  sample(out, "strata:num_requests_waiting", "gauge", "Sequences waiting to be scheduled.",
         m.waiting);
  sample(out, "strata:kv_cache_usage_ratio", "gauge",
         "Fraction of KV cache blocks held by sequences.", m.kv.usage_ratio());
  sample(out, "strata:kv_cache_bytes_in_use", "gauge",
         "K/V bytes in blocks held by sequences (paged pool plus sparse attention's stream pool).",
         static_cast<double>(m.kv_bytes_in_use));
  sample(out, "strata:kv_bytes_per_token", "gauge",
         "K/V bytes in use per token of live context (lower with streaming heads).",
         m.kv_context_tokens > 0
             ? static_cast<double>(m.kv_bytes_in_use) / static_cast<double>(m.kv_context_tokens)
             : 0.0);
  sample(out, "strata:moe_expert_load_imbalance", "gauge",
         "MoE models: max/mean tokens routed per expert since start, worst layer (1 = even).",
         m.moe_expert_load_imbalance);
  sample(out, "strata:prompt_tokens_total", "counter",
         "Prompt tokens computed (prefix-cache hits excluded).", m.prompt_tokens_total);
  sample(out, "strata:generation_tokens_total", "counter", "Tokens generated.",
         m.generation_tokens_total);
  sample(out, "strata:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.", m.prefix_queries_tokens);
  sample(out, "strata:prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache.", m.prefix_hits_tokens);
  sample(out, "strata:num_preemptions_total", "counter",
         "Sequences preempted for lack of KV cache.", m.preemptions);
  sample(out, "strata:spec_draft_tokens_total", "counter", "Speculative draft tokens verified.",
         m.spec_drafted_tokens);
  sample(out, "strata:spec_accepted_tokens_total", "counter", "Speculative draft tokens accepted.",
         m.spec_accepted_tokens);
  sample(out, "strata:spec_decode_steps_total", "counter",
         "Decode steps of a sequence that verified a draft.", m.spec_decode_steps);
  sample(out, "strata:plain_decode_steps_total", "counter",
         "Decode steps of a sequence without a draft.", m.plain_decode_steps);

  std::lock_guard<std::mutex> lock(mutex_);
  header(out, "strata:request_success_total", "counter", "Finished sequences by finish reason.");
  for (const auto& [reason, n] : finishes_) {
    out.append("strata:request_success_total{finish_reason=\"").append(reason).append("\"} ");
    append_number(out, n);
    out += "\n";
  }
  header(out, "strata:request_errors_total", "counter", "Error responses by HTTP status.");
  for (const auto& [code, n] : errors_) {
    out.append("strata:request_errors_total{code=\"").append(std::to_string(code)).append("\"} ");
    append_number(out, n);
    out += "\n";
  }
  sample(out, "strata:kv_transfer_bytes_total", "counter",
         "Prefill replica: KV message bytes sent to decode replicas.", kv_bytes_);
  sample(out, "strata:kv_transfer_blocks_total", "counter",
         "Prefill replica: KV blocks sent to decode replicas.", kv_blocks_sent_);
  header(out, "strata:kv_transfer_decisions_total", "counter",
         "Prefill replica: /internal/kv/prefill decisions by kind.");
  out.append("strata:kv_transfer_decisions_total{decision=\"transfer\"} ");
  append_number(out, kv_transfers_);
  out.append("\nstrata:kv_transfer_decisions_total{decision=\"recompute\"} ");
  append_number(out, kv_recomputes_);
  out += "\n";
  sample(out, "strata:kv_transfer_failures_total", "counter",
         "Prefill replica: KV sends that failed (the decode replica recomputes).",
         kv_send_failures_);
  sample(out, "strata:kv_import_blocks_total", "counter",
         "Decode replica: KV blocks imported into the prefix cache.", kv_blocks_imported_);
  sample(out, "strata:kv_import_rejections_total", "counter",
         "Decode replica: KV messages refused (checksum, model, layout, pool space).",
         kv_import_rejections_);
  return out;
}

}  // namespace strata::server
