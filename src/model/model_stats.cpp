// Size figures of a loaded model, for benchmarks and reports.
#include <string>

#include "model/model.h"

namespace strata {

double Model::matmul_params() const {
  return active_params_per_token();
}

double Model::active_params_per_token() const {
  const auto& m = config_.moe;
  double params = 0;
  for (const auto& t : file_.tensors()) {
    if (t.name == "token_embd.weight" || t.ne.size() < 2) continue;
    double n = static_cast<double>(t.n_elements);
    // Expert stacks: a token reads n_experts_used of their n_experts matrices.
    if (t.ne.size() == 3 && t.name.find("_exps.") != std::string::npos && m.n_experts > 0)
      n = n * static_cast<double>(m.n_experts_used) / static_cast<double>(m.n_experts);
    params += n;
  }
  return params;
}

}  // namespace strata
