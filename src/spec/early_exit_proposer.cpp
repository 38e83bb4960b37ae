#include "spec/early_exit_proposer.h"

#include <string>

#include "core/error.h"

namespace strata {

EarlyExitProposer::EarlyExitProposer(Model& model, ThreadPool& pool, KvCache& cache,
                                     int32_t n_layers)
    : cache_(cache), passes_(model, pool, n_layers) {
  if (n_layers < 1 || n_layers >= model.config().n_layers)
    throw Error("spec: --draft-layers must be in [1, " +
                std::to_string(model.config().n_layers - 1) + "] for this model");
}

void EarlyExitProposer::propose(std::span<Request* const> requests) {
  seqs_.clear();
  for (Request* r : requests) seqs_.push_back({r, r->kv.block_table(), r->kv.stream_table()});
  passes_.run(seqs_, cache_);
}

}  // namespace strata
