#include "engine/offline.h"

#include <memory>
#include <optional>
#include <unordered_map>

#include "core/clock.h"

namespace strata {
namespace {

double now_ms() {
  return 1e3 * steady_now_s();
}

}  // namespace

std::vector<OfflineResult> generate(EngineCore& engine, const Tokenizer* tokenizer,
                                    const std::vector<OfflineRequest>& requests,
                                    const std::function<void(const RequestOutput&)>& on_output) {
  std::vector<OfflineResult> results(requests.size());
  std::vector<std::optional<OutputProcessor>> processors(requests.size());
  std::unordered_map<RequestId, size_t> index;
  std::vector<bool> done(requests.size(), false);
  const double t0 = now_ms();
  for (size_t i = 0; i < requests.size(); ++i) {
    results[i].id = requests[i].id;
    results[i].n_prompt = static_cast<int32_t>(requests[i].prompt.size());
    if (tokenizer) processors[i].emplace(*tokenizer, requests[i].options.stop.stop_strings);
    index[engine.add_request(requests[i].prompt, requests[i].options)] = i;
  }
  while (engine.has_work()) {
    const auto outputs = engine.step();
    const double t = now_ms();
    for (const RequestOutput& o : outputs) {
      const size_t i = index.at(o.id);
      if (done[i]) continue;  // already ended by a stop string
      if (on_output) on_output(o);
      OfflineResult& r = results[i];
      r.logprobs.insert(r.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      if (!o.prompt_logits.empty()) r.prompt_logits = o.prompt_logits;
      if (r.tokens.empty() && !o.new_tokens.empty()) r.ttft_ms = t - t0;
      r.tokens.insert(r.tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
      r.n_cached_prompt = o.n_cached_prompt;
      if (processors[i]) {
        const auto delta = processors[i]->push(o.new_tokens, o.finished());
        r.text += delta.text;
        if (delta.stopped && !o.finished()) {
          engine.abort(o.id);
          r.finish = FinishReason::kStop;
          r.e2e_ms = t - t0;
          done[i] = true;
          continue;
        }
        if (delta.stopped) r.finish = FinishReason::kStop;
      }
      if (o.finished()) {
        if (r.finish == FinishReason::kNone) r.finish = o.finish;
        r.e2e_ms = t - t0;
        done[i] = true;
      }
    }
  }
  return results;
}

}  // namespace strata
