#include "convert/quant_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace strata {
namespace {

// Three tensors, types (4-bit, 5-bit, 8-bit) with convex (bytes, sensitivity) curves.
// Tensor 1 is the sensitive one. Budget 40 bytes: cheapest 30, so 10 extra bytes buy
// the best drops per byte: tensor 1 to 5-bit (0.9 per 4 bytes = 0.225/B), then tensor 1
// to 8-bit (+6 bytes, 0.015/B) beats tensor 0 to 5-bit (0.0125/B). Brute force agrees.
TEST(QuantPlan, ExactChoiceOnSmallProblem) {
  const std::vector<std::vector<PlanOption>> opts = {
      {{4, 10, 0.10}, {5, 14, 0.05}, {8, 20, 0.01}},
      {{4, 10, 1.00}, {5, 14, 0.10}, {8, 20, 0.01}},
      {{4, 10, 0.02}, {5, 14, 0.01}, {8, 20, 0.00}},
  };
  const auto pick = solve_quant_plan(opts, 40);
  EXPECT_EQ(pick, (std::vector<size_t>{0, 2, 0}));
  // Brute force over all 27 plans.
  double best = 1e9;
  std::vector<size_t> arg;
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = 0; b < 3; ++b)
      for (size_t c = 0; c < 3; ++c) {
        const uint64_t bytes = opts[0][a].bytes + opts[1][b].bytes + opts[2][c].bytes;
        const double s = opts[0][a].sensitivity + opts[1][b].sensitivity + opts[2][c].sensitivity;
        if (bytes <= 40 && s < best) best = s, arg = {a, b, c};
      }
  EXPECT_EQ(pick, arg);
  // A larger budget upgrades everything; the cheapest plan over budget is an error.
  EXPECT_EQ(solve_quant_plan(opts, 60), (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(solve_quant_plan(opts, 30), (std::vector<size_t>{0, 0, 0}));
  EXPECT_THROW(solve_quant_plan(opts, 29), Error);
}

// Four 64-column matrices (rows 32): sensitivity falls with bits; the embedding is
// floored at Q8_0 unless the budget forbids it.
std::vector<PlanTensor> four_tensors() {
  std::vector<PlanTensor> v;
  const char* names[] = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight",
                         "blk.0.attn_v.weight"};
  const double scale[] = {1.0, 0.1, 0.5, 2.0};
  for (int i = 0; i < 4; ++i) {
    PlanTensor t{names[i], {64, 32}, i == 0, {}};
    t.sensitivity = {{DType::Q4_0, 0.04 * scale[i]},
                     {DType::Q5_0, 0.01 * scale[i]},
                     {DType::Q8_0, 0.0004 * scale[i]},
                     {DType::F16, 0.0}};
    v.push_back(t);
  }
  return v;
}

TEST(QuantPlan, LaddersAndBytes) {
  EXPECT_EQ(type_ladder(64),
            (std::vector<DType>{DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::F16}));
  EXPECT_EQ(type_ladder(512).front(), DType::Q2_K);
  EXPECT_EQ(type_ladder(172), (std::vector<DType>{DType::F16}));
  EXPECT_EQ(tensor_bytes(DType::Q4_0, {64, 32}), 32u * 2 * 18);
  EXPECT_EQ(default_floor(64), DType::Q8_0);
  EXPECT_EQ(default_floor(256), DType::Q6_K);
  EXPECT_THROW(tensor_bytes(DType::Q4_0, {48, 2}), Error);
}

TEST(QuantPlan, RespectsBudgetAndFloors) {
  const auto ts = four_tensors();
  for (const double bpw : {5.0, 6.0, 7.0, 9.0, 12.0, 16.0}) {
    SCOPED_TRACE(bpw);
    const uint64_t budget = budget_for_bpw(bpw, ts);
    QuantPlan p;
    try {
      p = make_quant_plan(ts, budget);
    } catch (const Error&) {
      EXPECT_LT(bpw, 5.0);  // the smallest plan is all Q4_0: 4.5 bits per weight
      continue;
    }
    EXPECT_LE(p.total_bytes(), budget);
    ASSERT_EQ(p.tensors.size(), 4u);
    if (!p.floor_dropped) {
      EXPECT_TRUE(p.tensors[0].type == DType::Q8_0 || p.tensors[0].type == DType::F16);
    }
  }
  // At 5 bits the Q8_0 floor of the embedding (8.5 bits on a quarter of the weights) fits:
  // 4.5 * 3/4 + 8.5 / 4 = 5.5 > 5, so it is lifted, and the plan says so.
  const QuantPlan tight = make_quant_plan(ts, budget_for_bpw(5.0, ts));
  EXPECT_TRUE(tight.floor_dropped);
  const QuantPlan roomy = make_quant_plan(ts, budget_for_bpw(6.0, ts));
  EXPECT_FALSE(roomy.floor_dropped);
  EXPECT_EQ(roomy.tensors[0].type, DType::Q8_0);
  // The most sensitive tensor (attn_v) is upgraded before the least (attn_q).
  const QuantPlan mid = make_quant_plan(ts, budget_for_bpw(7.0, ts));
  EXPECT_GE(dtype_info(mid.tensors[3].type).type_size, dtype_info(mid.tensors[1].type).type_size);
  // An explicit floor.
  const QuantPlan f16floor = make_quant_plan(ts, budget_for_bpw(9.0, ts), DType::F16);
  EXPECT_EQ(f16floor.tensors[0].type, DType::F16);
}

TEST(QuantPlan, BudgetBelowTheSmallestTypeIsAClearError) {
  const auto ts = four_tensors();
  try {
    make_quant_plan(ts, budget_for_bpw(3.0, ts));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4.500 bits per weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(budget_for_bpw(-1, ts), Error);
  EXPECT_THROW(budget_for_bpw(0, ts), Error);
  auto none = ts;
  none[1].sensitivity.clear();
  EXPECT_THROW(make_quant_plan(none, budget_for_bpw(16, ts)), Error);
}

TEST(QuantPlan, JsonRoundTrip) {
  const auto ts = four_tensors();
  const QuantPlan p = make_quant_plan(ts, budget_for_bpw(7.0, ts));
  const QuantPlan r = plan_from_json(plan_to_json(p));
  EXPECT_EQ(r.budget_bytes, p.budget_bytes);
  EXPECT_EQ(r.floor_dropped, p.floor_dropped);
  ASSERT_EQ(r.tensors.size(), p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    EXPECT_EQ(r.tensors[i].name, p.tensors[i].name);
    EXPECT_EQ(r.tensors[i].type, p.tensors[i].type);
    EXPECT_EQ(r.tensors[i].bytes, p.tensors[i].bytes);
    EXPECT_EQ(r.tensors[i].n_weights, p.tensors[i].n_weights);
    EXPECT_DOUBLE_EQ(r.tensors[i].sensitivity, p.tensors[i].sensitivity);
  }
  EXPECT_EQ(r.types(), p.types());
  EXPECT_THROW(plan_from_json("not json"), Error);
  EXPECT_THROW(plan_from_json("[]"), Error);
  EXPECT_THROW(plan_from_json(R"({"budget_bytes": -1, "tensors": []})"), Error);
  EXPECT_THROW(plan_from_json(R"({"budget_bytes": 1, "tensors": [{"name": "a", "type": "q9_9",
      "bytes": 1, "n_weights": 1, "sensitivity": 0}]})"),
               Error);
  EXPECT_THROW(plan_from_json(R"({"budget_bytes": 1, "tensors": [
      {"name": "a", "type": "q4_0", "bytes": 1, "n_weights": 1, "sensitivity": 0},
      {"name": "a", "type": "q4_0", "bytes": 1, "n_weights": 1, "sensitivity": 0}]})"),
               Error);
  EXPECT_THROW(plan_from_json(R"({"budget_bytes": 1, "tensors": [{"name": "a"}]})"), Error);
}

}  // namespace
}  // namespace strata
