#include "convert/quant_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
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

std::vector<DType> type_ladder(int64_t cols) {
  if (cols > 0 && cols % 256 == 0)
    return {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
            DType::Q6_K, DType::Q8_0, DType::F16};
  if (cols > 0 && cols % 32 == 0) return {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::F16};
  return {DType::F16};
}

DType default_floor(int64_t cols) {
  return cols % 256 == 0 ? DType::Q6_K : DType::Q8_0;
}

uint64_t tensor_bytes(DType t, const std::vector<int64_t>& ne) {
  if (ne.empty() || ne[0] <= 0) throw Error("tensor_bytes: empty shape");
  const auto info = dtype_info(t);
  if (ne[0] % info.block_size != 0)
    throw Error("tensor_bytes: row of " + std::to_string(ne[0]) + " does not divide into " +
                std::string(dtype_name(t)) + " blocks");
  uint64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= static_cast<uint64_t>(ne[i]);
  return rows * static_cast<uint64_t>(ne[0] / info.block_size) * info.type_size;
}

namespace {

uint64_t elements(const std::vector<int64_t>& ne) {
  uint64_t n = 1;
  for (const int64_t d : ne) n *= static_cast<uint64_t>(d);
  return n;
}

double bits_per_element(DType t) {
  const auto info = dtype_info(t);
  return 8.0 * static_cast<double>(info.type_size) / static_cast<double>(info.block_size);
}

}  // namespace

uint64_t QuantPlan::total_bytes() const {
  uint64_t b = 0;
  for (const auto& t : tensors) b += t.bytes;
  return b;
}

uint64_t QuantPlan::n_weights() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.n_weights;
  return n;
}

double QuantPlan::bpw() const {
  const uint64_t n = n_weights();
  return n ? 8.0 * static_cast<double>(total_bytes()) / static_cast<double>(n) : 0.0;
}

double QuantPlan::total_sensitivity() const {
  double s = 0;
  for (const auto& t : tensors) s += t.sensitivity;
  return s;
}

std::map<std::string, DType> QuantPlan::types() const {
  std::map<std::string, DType> m;
  for (const auto& t : tensors) m[t.name] = t.type;
  return m;
}

uint64_t budget_for_bpw(double bpw, const std::vector<PlanTensor>& tensors) {
  if (!(bpw > 0) || !std::isfinite(bpw)) throw Error("--target-bpw must be a positive number");
  uint64_t n = 0;
  for (const auto& t : tensors) n += elements(t.ne);
  return static_cast<uint64_t>(std::floor(bpw * static_cast<double>(n) / 8.0));
}

QuantPlan make_quant_plan(const std::vector<PlanTensor>& tensors, uint64_t budget,
                          std::optional<DType> floor) {
  auto build = [&](bool floors) {
    std::vector<std::vector<PlanOption>> opts(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const PlanTensor& t = tensors[i];
      const double min_bits =
          floors && t.floored ? bits_per_element(floor ? *floor : default_floor(t.ne[0])) : 0.0;
      for (const auto& [type, s] : t.sensitivity) {
        if (t.ne.empty() || t.ne[0] % dtype_info(type).block_size != 0) continue;
        if (bits_per_element(type) + 1e-9 < min_bits) continue;
        opts[i].push_back({static_cast<int>(type), tensor_bytes(type, t.ne), s});
      }
      if (opts[i].empty())
        throw Error("quant plan: tensor " + t.name + " has no candidate type" +
                    (min_bits > 0 ? " at or above its floor" : ""));
    }
    return opts;
  };
  auto cheapest = [](const std::vector<std::vector<PlanOption>>& opts) {
    uint64_t sum = 0;
    for (const auto& o : opts) {
      uint64_t m = o[0].bytes;
      for (const auto& c : o) m = std::min(m, c.bytes);
      sum += m;
    }
    return sum;
  };
  QuantPlan plan;
  plan.budget_bytes = budget;
  auto opts = build(true);
  if (cheapest(opts) > budget) {
    opts = build(false);
    plan.floor_dropped = true;
    const uint64_t need = cheapest(opts);
    if (need > budget) {
      uint64_t n = 0;
      for (const auto& t : tensors) n += elements(t.ne);
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "quant plan: the budget of %llu bytes (%.3f bits per weight) is below the "
                    "smallest plan, %llu bytes (%.3f bits per weight)",
                    static_cast<unsigned long long>(budget),
                    8.0 * static_cast<double>(budget) / static_cast<double>(n),
                    static_cast<unsigned long long>(need),
                    8.0 * static_cast<double>(need) / static_cast<double>(n));
      throw Error(buf);
    }
  }
  const auto pick = solve_quant_plan(opts, budget);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlanOption& o = opts[i][pick[i]];
    plan.tensors.push_back({tensors[i].name, static_cast<DType>(o.type), o.bytes,
                            elements(tensors[i].ne), o.sensitivity});
  }
  return plan;
}

std::string plan_to_json(const QuantPlan& plan) {
  nlohmann::json j;
  j["budget_bytes"] = plan.budget_bytes;
  j["total_bytes"] = plan.total_bytes();
  j["n_weights"] = plan.n_weights();
  j["bpw"] = plan.bpw();
  j["floor_dropped"] = plan.floor_dropped;
  j["total_sensitivity"] = plan.total_sensitivity();
  j["tensors"] = nlohmann::json::array();
  for (const auto& t : plan.tensors)
    j["tensors"].push_back({{"name", t.name},
                            {"type", std::string(dtype_name(t.type))},
                            {"bytes", t.bytes},
                            {"n_weights", t.n_weights},
                            {"sensitivity", t.sensitivity}});
  return j.dump(2) + "\n";
}

QuantPlan plan_from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error("plan: not a JSON object");
  auto field = [](const nlohmann::json& o, const char* key, auto check, const char* what) {
    if (!o.contains(key) || !check(o[key]))
      throw Error(std::string("plan: field '") + key + "' missing or not " + what);
    return o[key];
  };
  const auto is_uint = [](const nlohmann::json& v) { return v.is_number_unsigned(); };
  const auto is_num = [](const nlohmann::json& v) { return v.is_number(); };
  QuantPlan p;
  p.budget_bytes = field(j, "budget_bytes", is_uint, "an unsigned integer").get<uint64_t>();
  if (j.contains("floor_dropped")) {
    if (!j["floor_dropped"].is_boolean()) throw Error("plan: 'floor_dropped' is not a boolean");
    p.floor_dropped = j["floor_dropped"].get<bool>();
  }
  const auto ts = field(
      j, "tensors", [](const nlohmann::json& v) { return v.is_array(); }, "an array");
  for (const auto& t : ts) {
    if (!t.is_object()) throw Error("plan: a 'tensors' entry is not an object");
    PlanEntry e;
    e.name = field(
                 t, "name", [](const nlohmann::json& v) { return v.is_string(); }, "a string")
                 .get<std::string>();
    const auto tn =
        field(
            t, "type", [](const nlohmann::json& v) { return v.is_string(); }, "a string")
            .get<std::string>();
    const auto type = dtype_from_name(tn);
    if (!type) throw Error("plan: tensor " + e.name + ": unknown type '" + tn + "'");
    e.type = *type;
    e.bytes = field(t, "bytes", is_uint, "an unsigned integer").get<uint64_t>();
    e.n_weights = field(t, "n_weights", is_uint, "an unsigned integer").get<uint64_t>();
    e.sensitivity = field(t, "sensitivity", is_num, "a number").get<double>();
    for (const auto& o : p.tensors)
      if (o.name == e.name) throw Error("plan: tensor " + e.name + " listed twice");
    p.tensors.push_back(std::move(e));
  }
  return p;
}

}  // namespace strata
