#include "loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"

namespace strata::loadgen {
namespace {

double parse_number(const std::string& s, const std::string& flag) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || !std::isfinite(v)) {
    throw Error(flag + ": expected a number, got '" + s + "'");
  }
  return v;
}

}  // namespace

Slo parse_slo(const std::vector<std::string>& items) {
  Slo slo;
  for (const std::string& item : items) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      throw Error("--goodput: expected NAME:MS (ttft, tpot or e2el), got '" + item + "'");
    }
    const std::string name = item.substr(0, colon);
    const double ms = parse_number(item.substr(colon + 1), "--goodput " + name);
    if (ms < 0) throw Error("--goodput " + name + ": must be >= 0 ms");
    std::optional<double>* slot = name == "ttft"   ? &slo.ttft_ms
                                  : name == "tpot" ? &slo.tpot_ms
                                  : name == "e2el" ? &slo.e2el_ms
                                                   : nullptr;
    if (!slot) throw Error("--goodput: unknown metric '" + name + "' (ttft, tpot or e2el)");
    if (*slot) throw Error("--goodput: " + name + " given twice");
    *slot = ms;
  }
  return slo;
}

std::vector<double> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const double p = parse_number(item, "--percentiles");
    if (p < 0 || p > 100) throw Error("--percentiles: each must be in [0, 100], got " + item);
    out.push_back(p);
  }
  if (out.empty()) throw Error("--percentiles: expected a list such as 50,90,99");
  return out;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw Error("percentile of no values");
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution describe(std::vector<double> values, const std::vector<double>& percentiles) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) {  // the same keys, with no meaning (count 0)
    for (double p : percentiles) d.percentiles.emplace_back(p, 0.0);
    return d;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  d.median = percentile(values, 50);
  for (double p : percentiles) d.percentiles.emplace_back(p, percentile(values, p));
  return d;
}

std::optional<double> tpot_s(const RequestRecord& r) {
  if (!r.ok() || r.output_tokens <= 1) return std::nullopt;
  return (r.e2el_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
}

bool meets_slo(const RequestRecord& r, const Slo& slo) {
  if (!r.ok()) return false;
  if (slo.ttft_ms && r.ttft_s * 1e3 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && tpot_s(r).value_or(0.0) * 1e3 > *slo.tpot_ms) return false;
  if (slo.e2el_ms && r.e2el_s * 1e3 > *slo.e2el_ms) return false;
  return true;
}

Summary summarize(const std::vector<RequestRecord>& records, double duration_s,
                  const std::vector<double>& percentiles, const Slo& slo) {
  Summary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  std::map<std::string, int64_t> errors;
  int64_t good = 0;
  for (const RequestRecord& r : records) {
    if (!r.ok()) {
      ++s.failed;
      ++errors[r.error];
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    e2el.push_back(r.e2el_s * 1e3);
    if (const auto t = tpot_s(r)) tpot.push_back(*t * 1e3);
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    if (meets_slo(r, slo)) ++good;
  }
  const double dur = duration_s > 0 ? duration_s : 0;
  auto per_s = [dur](double x) { return dur > 0 ? x / dur : 0.0; };
  s.request_throughput = per_s(static_cast<double>(s.completed));
  s.output_throughput = per_s(static_cast<double>(s.total_output_tokens));
  s.total_token_throughput =
      per_s(static_cast<double>(s.total_input_tokens + s.total_output_tokens));
  if (slo.any()) s.goodput = per_s(static_cast<double>(good));
  s.ttft_ms = describe(std::move(ttft), percentiles);
  s.tpot_ms = describe(std::move(tpot), percentiles);
  s.itl_ms = describe(std::move(itl), percentiles);
  s.e2el_ms = describe(std::move(e2el), percentiles);
  s.errors.assign(errors.begin(), errors.end());
  std::stable_sort(s.errors.begin(), s.errors.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return s;
}

std::vector<double> throughput_timeline(const std::vector<RequestRecord>& records, double bin_s) {
  if (!(bin_s > 0)) throw Error("throughput_timeline: bin width must be > 0");
  std::vector<double> bins;
  for (const RequestRecord& r : records) {
    if (!r.ok() || r.ttft_s < 0 || r.output_tokens <= 0) continue;
    const double per_chunk =
        static_cast<double>(r.output_tokens) / static_cast<double>(r.itl_s.size() + 1);
    double t = r.start_s + r.ttft_s;
    for (size_t i = 0; i <= r.itl_s.size(); ++i) {
      if (i > 0) t += r.itl_s[i - 1];
      const size_t bin = static_cast<size_t>(std::max(0.0, t) / bin_s);
      if (bin >= bins.size()) bins.resize(bin + 1, 0.0);
      bins[bin] += per_chunk;
    }
  }
  for (double& b : bins) b /= bin_s;
  return bins;
}

}  // namespace strata::loadgen
