// The benchmark's statistics, measured at the client, with the definitions of vLLM's
// benchmark_serving: pure functions over the per-request records.
//
//   TTFT   send -> first chunk carrying generated text
//   ITL    every gap between successive text-carrying chunks, pooled over requests
//   TPOT   per request, (E2E - TTFT) / (output tokens - 1), requests with > 1 token
//   E2E    send -> last text-carrying chunk
//
// Failed requests never enter a latency distribution, but are counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::loadgen {

struct RequestRecord {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  double start_s = 0;  // send time, seconds after the benchmark started
  double ttft_s = -1;  // < 0: no generated text arrived
  double e2el_s = -1;  // < 0: no generated text arrived
  std::vector<double> itl_s;
  std::string error;  // empty: the request succeeded

  bool ok() const { return error.empty(); }
};

// Service-level objectives for goodput, in milliseconds; unset ones are not checked.
struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// Parses "ttft:MS", "tpot:MS", "e2el:MS" items (each at most once); throws
// strata::Error naming --goodput.
Slo parse_slo(const std::vector<std::string>& items);

// Parses "50,90,99" style lists (each in [0, 100]); throws strata::Error naming --percentiles.
std::vector<double> parse_percentiles(const std::string& text);

// numpy.percentile's default ("linear"): position p/100 x (n-1) in the sorted values,
// interpolated between its neighbours. `sorted` must be sorted ascending and non-empty.
double percentile(const std::vector<double>& sorted, double p);

struct Distribution {
  size_t count = 0;  // 0: no values (mean, median and percentiles are then meaningless)
  double mean = 0;
  double median = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value)
};

// Mean, median and the given percentiles of `values` (any order).
Distribution describe(std::vector<double> values, const std::vector<double>& percentiles);

// (E2E - TTFT) / (output tokens - 1) of a successful request with more than one output
// token; nullopt otherwise.
std::optional<double> tpot_s(const RequestRecord& r);

// Whether a successful request meets every SLO given (a request with one output token
// has TPOT 0 for this purpose, as in vLLM).
bool meets_slo(const RequestRecord& r, const Slo& slo);

struct Summary {
  int64_t completed = 0;
  int64_t failed = 0;
  double duration_s = 0;
  int64_t total_input_tokens = 0;   // successful requests only
  int64_t total_output_tokens = 0;  // successful requests only
  double request_throughput = 0;
  double output_throughput = 0;
  double total_token_throughput = 0;
  std::optional<double> goodput;  // requests/s meeting every SLO; unset without SLOs
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::pair<std::string, int64_t>> errors;  // distinct messages, most frequent first
};

Summary summarize(const std::vector<RequestRecord>& records, double duration_s,
                  const std::vector<double>& percentiles, const Slo& slo);

// Output tokens received in each `bin_s`-wide interval after the start, divided by
// `bin_s` (tokens/s). A request's output tokens are spread evenly over its
// text-carrying chunks (send + TTFT, then + each ITL).
std::vector<double> throughput_timeline(const std::vector<RequestRecord>& records, double bin_s);

}  // namespace strata::loadgen
