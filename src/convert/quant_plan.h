// The per-tensor type plan of `strata quantize --target-bpw / --target-size` (issue 21,
// part 3): each tensor has candidate types, each with its encoded bytes and measured
// sensitivity (KLD of the final logits when only that tensor takes that type); the plan
// picks one candidate per tensor to minimise summed sensitivity within a byte budget.
// Solver: greedy by marginal gain per byte. Every tensor starts at its cheapest
// candidate; then, while some upgrade fits the budget, the upgrade (to any dearer
// candidate of one tensor) with the largest sensitivity drop per extra byte is taken.
// Not optimal in general (multiple-choice knapsack), exact when each tensor's
// (bytes, sensitivity) points are convex, which the test checks on a small problem.
// Not yet wired into strata quantize: the sensitivity pass that feeds it is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

struct PlanOption {
  int type = 0;  // the caller's id (a DType)
  uint64_t bytes = 0;
  double sensitivity = 0;
};

// options[t]: the candidates of tensor t (the caller has already removed types invalid
// for its row size or below its floor). Returns the chosen index per tensor; throws
// Error when even the cheapest choice exceeds `budget`.
std::vector<size_t> solve_quant_plan(const std::vector<std::vector<PlanOption>>& options,
                                     uint64_t budget);

}  // namespace strata
