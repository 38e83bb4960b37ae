#include "convert/quant_plan.h"

#include <string>

#include "core/error.h"

namespace strata {

std::vector<size_t> solve_quant_plan(const std::vector<std::vector<PlanOption>>& options,
                                     uint64_t budget) {
  std::vector<size_t> pick(options.size());
  uint64_t used = 0;
  for (size_t t = 0; t < options.size(); ++t) {
    if (options[t].empty()) throw Error("quant plan: tensor " + std::to_string(t) + " has no type");
    for (size_t i = 1; i < options[t].size(); ++i)
      if (options[t][i].bytes < options[t][pick[t]].bytes) pick[t] = i;
    used += options[t][pick[t]].bytes;
  }
  if (used > budget)
    throw Error("quant plan: the smallest types need " + std::to_string(used) +
                " bytes, over the budget of " + std::to_string(budget));
  for (;;) {
    double best = 0;
    size_t bt = 0, bi = 0;
    bool found = false;
    for (size_t t = 0; t < options.size(); ++t) {
      const PlanOption& cur = options[t][pick[t]];
      for (size_t i = 0; i < options[t].size(); ++i) {
        const PlanOption& o = options[t][i];
        if (o.bytes <= cur.bytes || o.sensitivity >= cur.sensitivity) continue;
        if (used - cur.bytes + o.bytes > budget) continue;
        const double gain =
            (cur.sensitivity - o.sensitivity) / static_cast<double>(o.bytes - cur.bytes);
        if (!found || gain > best) {
          best = gain;
          bt = t;
          bi = i;
          found = true;
        }
      }
    }
    if (!found) return pick;
    used = used - options[bt][pick[bt]].bytes + options[bt][bi].bytes;
    pick[bt] = bi;
  }
}

}  // namespace strata
