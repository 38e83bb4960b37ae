// Drives one benchmark: requests arrive on the gamma arrival process, wait at the
// client for one of --max-concurrency slots, and are then sent (their latencies count
// from the send, as in vLLM); every response is recorded as it streams in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loadgen/http_client.h"
#include "loadgen/stats.h"

namespace strata::loadgen {

struct RunOptions {
  Url url;
  std::string endpoint = "/v1/completions";
  std::string api_key;
  double request_rate = 0;  // requests/s; infinity = all at once
  double burstiness = 1;
  int64_t max_concurrency = 0;  // 0 = unlimited
  uint64_t seed = 0;
  double timeout_s = 600;
};

struct RequestSpec {
  std::string body;  // JSON
  int64_t prompt_tokens = 0;
};

struct Progress {
  int64_t total = 0, completed = 0, failed = 0, running = 0, output_tokens = 0;
  double elapsed_s = 0;
};

struct RunResult {
  std::vector<RequestRecord> records;  // in the order of `requests`
  double duration_s = 0;               // first send to last response end
};

// `on_progress` (optional) is called about every 100 ms and once at the end.
RunResult run_benchmark(const RunOptions& o, const std::vector<RequestSpec>& requests,
                        const std::function<void(const Progress&)>& on_progress = {});

}  // namespace strata::loadgen
