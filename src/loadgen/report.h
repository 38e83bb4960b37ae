// The benchmark's outputs: the human-readable table (stdout) and the result JSON
//   {"summary": {"completed", "failed", "duration_s", "total_input_tokens",
//                "total_output_tokens", "request_throughput", "output_throughput",
//                "total_token_throughput", "goodput" (null without --goodput),
//                "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms": {"mean", "median", "p90",
//                "p99"} (one "pN" per --percentiles value other than 50; values null
//                when there were none), "errors": [{"message", "count"}]},
//    "config": {...every flag...},
//    "requests": [{"prompt_tokens", "output_tokens", "ttft_ms", "e2el_ms", "itl_ms": [...],
//                  "error" (null on success)}]}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/stats.h"

namespace strata::loadgen {

// "p90", "p99.9": the key of a percentile.
std::string percentile_key(double p);

std::string summary_table(const Summary& s);

nlohmann::json distribution_json(const Distribution& d);
nlohmann::json summary_json(const Summary& s);
nlohmann::json result_json(const Summary& s, const nlohmann::json& config,
                           const std::vector<RequestRecord>& records);

}  // namespace strata::loadgen
