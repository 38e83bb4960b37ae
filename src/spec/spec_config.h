// Speculative decoding's switches: which proposer drafts, how many tokens at most, and
// whether the adaptive controller may lower that (to 0) where speculation does not pay.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

enum class SpecMethod { kNone, kNgram, kDraftModel, kEarlyExit };

struct SpecConfig {
  SpecMethod method = SpecMethod::kNone;
  int32_t k = 4;  // draft tokens per step at most
  // n-gram lookup: the longest suffix of n tokens (max down to min) found earlier in the
  // sequence proposes what followed it.
  int32_t ngram_min = 1, ngram_max = 4;
  int32_t draft_layers = 0;  // early exit: layers of the target the draft runs (0: a quarter)
  bool adaptive = true;      // choose k per step from measured acceptance and costs
  // Adaptive: a request drafting nothing re-tries one draft token after this many steps,
  // so a workload that starts paying is noticed.
  int32_t probe_interval = 16;
};

std::optional<SpecMethod> parse_spec_method(std::string_view name);
std::string_view spec_method_name(SpecMethod method);

}  // namespace strata
