#include "sched/request.h"

#include <algorithm>
#include <utility>

namespace strata {

Request::Request(RequestId id_, std::vector<int32_t> prompt, const RequestOptions& o,
                 int64_t n_vocab)
    : id(id_),
      options(o),
      n_prompt(static_cast<int32_t>(prompt.size())),
      tokens(std::move(prompt)),
      sampler(o.sampling, n_vocab) {
  tokens.reserve(tokens.size() + static_cast<size_t>(std::max(o.stop.max_tokens, 0)) + 1);
  kv.salt = o.cache_salt;
  if (o.grammar) constraint = std::make_unique<grammar::Constraint>(o.grammar);
}

}  // namespace strata
