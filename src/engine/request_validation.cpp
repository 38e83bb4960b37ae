#include "engine/request_validation.h"

#include <string>

#include "core/error.h"
#include "grammar/compiled.h"

namespace strata {

void validate_request(std::span<const int32_t> prompt, const RequestOptions& o, int64_t n_vocab,
                      int64_t max_model_len) {
  if (prompt.empty()) throw Error("prompt: must contain at least one token");
  for (int32_t t : prompt) {
    if (t < 0 || t >= n_vocab)
      throw Error("prompt: token id " + std::to_string(t) + " is outside the vocabulary");
  }
  // A prompt must leave room for one more position when the request generates; one that
  // only asks for its prompt's logits may fill the context.
  const int64_t limit = max_model_len;
  const int64_t room = o.stop.max_tokens > 0 ? 1 : 0;
  if (static_cast<int64_t>(prompt.size()) > limit) {
    throw Error("prompt: " + std::to_string(prompt.size()) + " tokens exceed the context of " +
                std::to_string(limit) + " tokens");
  }
  if (static_cast<int64_t>(prompt.size()) + room > limit) {
    throw Error("prompt: " + std::to_string(prompt.size()) +
                " tokens leave no room to generate within " + std::to_string(limit) +
                " tokens of context");
  }
  if (o.stop.max_tokens < 0) throw Error("max_tokens: must be >= 0");
  if (o.stop.min_tokens < 0) throw Error("min_tokens: must be >= 0");
  if (!(o.sampling.temperature >= 0.0f)) throw Error("temperature: must be >= 0");
  if (!(o.sampling.top_p > 0.0f && o.sampling.top_p <= 1.0f))
    throw Error("top_p: must be in (0, 1]");
  if (o.sampling.top_k < 0) throw Error("top_k: must be >= 0");
  if (!(o.sampling.min_p >= 0.0f && o.sampling.min_p <= 1.0f))
    throw Error("min_p: must be in [0, 1]");
  if (!(o.sampling.repetition_penalty > 0.0f)) throw Error("repetition_penalty: must be > 0");
  if (o.logprobs > 20) throw Error("logprobs: at most 20");
  if (o.grammar && o.grammar->vocab().n_vocab() != n_vocab)
    throw Error("grammar: compiled for a vocabulary of " +
                std::to_string(o.grammar->vocab().n_vocab()) + " tokens, the model has " +
                std::to_string(n_vocab));
  if (o.prompt_logprobs < -1 || o.prompt_logprobs > 20)
    throw Error("prompt_logprobs: must be -1 (none) or in [0, 20]");
  if (o.prompt_logits < 0 || o.prompt_logits > static_cast<int64_t>(prompt.size())) {
    throw Error("prompt_logits: must be in [0, " + std::to_string(prompt.size()) +
                "] (the prompt's length)");
  }
}

}  // namespace strata
