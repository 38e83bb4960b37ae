// The server's Prometheus metrics (text exposition format 0.0.4, `strata:` prefix):
// latency histograms observed per sequence, outcome counters, and the engine's gauges
// and counters read from an EngineMetrics snapshot at scrape time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_core.h"

namespace strata::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double value);

  // Appends the _bucket/_sum/_count lines of `name`.
  void render(std::string& out, std::string_view name) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // (bounds + 1) per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();

  Histogram time_to_first_token;  // seconds from the request's arrival to its first token
  Histogram inter_token_latency;  // seconds between consecutive tokens of a sequence
  Histogram e2e_request_latency;  // seconds from arrival to the sequence's end
  Histogram request_queue_time;   // seconds the sequence waited to be first scheduled

  // Prefill/decode disaggregation (server/kv_transfer.h): seconds and bytes of each KV
  // transfer sent, the transfer-vs-recompute decisions, and the imports refused.
  Histogram kv_transfer_seconds;
  void count_kv_transfer(uint64_t bytes, uint64_t blocks);
  void count_kv_decision(bool transfer);
  void count_kv_send_failure();
  void count_kv_import(uint64_t blocks);
  void set_kv_import_rejections(uint64_t n);

  void count_finish(FinishReason reason);  // request_success_total{finish_reason}
  void count_error(int status);            // request_errors_total{code}

  // The whole exposition; `engine` gives the gauges and the engine's own counters.
  std::string render(const EngineMetrics& engine) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> finishes_;
  std::map<int, uint64_t> errors_;
  uint64_t kv_bytes_ = 0, kv_blocks_sent_ = 0, kv_transfers_ = 0, kv_recomputes_ = 0,
           kv_send_failures_ = 0, kv_blocks_imported_ = 0, kv_import_rejections_ = 0;
};

}  // namespace strata::server
