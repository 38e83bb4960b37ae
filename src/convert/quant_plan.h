// The per-tensor type plan of `strata quantize --target-bpw / --target-size` (issue 21,
// part 3): each tensor has candidate types, each with its encoded bytes and measured
// sensitivity (KLD of the final logits when only that tensor takes that type); the plan
// picks one candidate per tensor to minimise summed sensitivity within a byte budget.
// Solver: greedy by marginal gain per byte. Every tensor starts at its cheapest
// candidate; then, while some upgrade fits the budget, the upgrade (to any dearer
// candidate of one tensor) with the largest sensitivity drop per extra byte is taken.
// Not optimal in general (multiple-choice knapsack), exact when each tensor's
// (bytes, sensitivity) points are convex, which the test checks on a small problem.
// strata quantize --target-bpw / --target-size builds the candidates (make_quant_plan)
// from the sensitivity pass (eval/calib_run.h) and writes the plan as JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

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

// The types a matrix with rows of `cols` elements may take in a plan, cheapest first:
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_0, F16 when cols divides into 256; Q4_0, Q5_0, Q8_0, F16
// when it divides into 32; F16 alone otherwise.
std::vector<DType> type_ladder(int64_t cols);

// The floor of the token embedding and the classifier: Q6_K for 256-multiples, else Q8_0.
DType default_floor(int64_t cols);

// Bytes of a tensor of shape `ne` (ne[0] = row length) in type `t`.
uint64_t tensor_bytes(DType t, const std::vector<int64_t>& ne);

// One matrix to plan: its shape, whether the floor applies to it, and the measured
// sensitivity of each candidate type (types without a measurement are not candidates).
struct PlanTensor {
  std::string name;
  std::vector<int64_t> ne;
  bool floored = false;
  std::map<DType, double> sensitivity;
};

struct PlanEntry {
  std::string name;
  DType type = DType::F32;
  uint64_t bytes = 0, n_weights = 0;
  double sensitivity = 0;
};

struct QuantPlan {
  uint64_t budget_bytes = 0;
  bool floor_dropped = false;  // the floors did not fit the budget and were lifted
  std::vector<PlanEntry> tensors;
  uint64_t total_bytes() const;
  uint64_t n_weights() const;
  double bpw() const;  // 8 * total_bytes / n_weights
  double total_sensitivity() const;
  std::map<std::string, DType> types() const;
};

// Bytes a budget of `bpw` bits per weight allows over the matrices in `tensors`.
uint64_t budget_for_bpw(double bpw, const std::vector<PlanTensor>& tensors);

// The plan minimising summed sensitivity within `budget` bytes (solve_quant_plan). Floored
// tensors take no type below `floor` (nullopt = default_floor of their rows) unless even
// the cheapest floored plan exceeds the budget; then the floors are lifted and
// floor_dropped is set. Error when the cheapest plan without floors exceeds the budget
// (the message gives the smallest bits per weight possible) or a tensor has no candidate.
QuantPlan make_quant_plan(const std::vector<PlanTensor>& tensors, uint64_t budget,
                          std::optional<DType> floor = std::nullopt);

// The plan file (OUT.plan.json):
//   {"budget_bytes": N, "total_bytes": N, "n_weights": N, "bpw": B, "floor_dropped": false,
//    "total_sensitivity": S,
//    "tensors": [{"name": "...", "type": "q4_0", "bytes": N, "n_weights": N,
//                 "sensitivity": S}, ...]}
// plan_from_json checks every field (Error naming it) and the type names.
std::string plan_to_json(const QuantPlan& plan);
QuantPlan plan_from_json(const std::string& text);

}  // namespace strata
