// Size figures of a loaded model, for benchmarks and reports.
#include "model/model.h"

namespace strata {

double Model::matmul_params() const {
  double params = 0;
  for (const auto& t : file_.tensors()) {
    if (t.ne.size() == 2 && t.name != "token_embd.weight")
      params += static_cast<double>(t.n_elements);
  }
  return params;
}

}  // namespace strata
