#include "loadgen/report.h"

#include <cstdio>

namespace strata::loadgen {
namespace {

using nlohmann::json;

std::string format_p(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

void line(std::string& out, const std::string& label, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-40s %s\n", label.c_str(), value.c_str());
  out += buf;
}

std::string num(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void header(std::string& out, const std::string& title, char fill) {
  const size_t width = 50;
  const size_t pad = title.size() + 2 <= width ? width - title.size() : 0;
  std::string s(pad / 2, fill);
  s += title;
  s.append(pad - pad / 2, fill);
  out += s + "\n";
}

void section(std::string& out, const std::string& title, const std::string& abbrev,
             const Distribution& d) {
  header(out, title, '-');
  if (d.count == 0) {
    line(out, abbrev + " (ms):", "n/a (no values)");
    return;
  }
  line(out, "Mean " + abbrev + " (ms):", num(d.mean));
  line(out, "Median " + abbrev + " (ms):", num(d.median));
  for (const auto& [p, v] : d.percentiles) {
    if (p == 50) continue;
    line(out, "P" + format_p(p) + " " + abbrev + " (ms):", num(v));
  }
}

}  // namespace

std::string percentile_key(double p) {
  return "p" + format_p(p);
}

std::string summary_table(const Summary& s) {
  std::string out;
  header(out, " Serving Benchmark Result ", '=');
  line(out, "Successful requests:", std::to_string(s.completed));
  line(out, "Failed requests:", std::to_string(s.failed));
  line(out, "Benchmark duration (s):", num(s.duration_s));
  line(out, "Total input tokens:", std::to_string(s.total_input_tokens));
  line(out, "Total generated tokens:", std::to_string(s.total_output_tokens));
  line(out, "Request throughput (req/s):", num(s.request_throughput));
  line(out, "Output token throughput (tok/s):", num(s.output_throughput));
  line(out, "Total token throughput (tok/s):", num(s.total_token_throughput));
  if (s.goodput) line(out, "Request goodput (req/s):", num(*s.goodput));
  section(out, "Time to First Token", "TTFT", s.ttft_ms);
  section(out, "Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
  section(out, "Inter-token Latency", "ITL", s.itl_ms);
  section(out, "End-to-end Latency", "E2EL", s.e2el_ms);
  header(out, "", '=');
  if (!s.errors.empty()) {
    out += "Errors (failed requests):\n";
    for (const auto& [message, count] : s.errors) {
      out += "  " + std::to_string(count) + " x " + message + "\n";
    }
  }
  return out;
}

json distribution_json(const Distribution& d) {
  auto value = [&d](double v) { return d.count > 0 ? json(v) : json(nullptr); };
  json j = {{"mean", value(d.mean)}, {"median", value(d.median)}};
  for (const auto& [p, v] : d.percentiles) {
    if (p != 50) j[percentile_key(p)] = value(v);
  }
  return j;
}

json summary_json(const Summary& s) {
  json errors = json::array();
  for (const auto& [message, count] : s.errors) {
    errors.push_back({{"message", message}, {"count", count}});
  }
  return {{"completed", s.completed},
          {"failed", s.failed},
          {"duration_s", s.duration_s},
          {"total_input_tokens", s.total_input_tokens},
          {"total_output_tokens", s.total_output_tokens},
          {"request_throughput", s.request_throughput},
          {"output_throughput", s.output_throughput},
          {"total_token_throughput", s.total_token_throughput},
          {"goodput", s.goodput ? json(*s.goodput) : json(nullptr)},
          {"ttft_ms", distribution_json(s.ttft_ms)},
          {"tpot_ms", distribution_json(s.tpot_ms)},
          {"itl_ms", distribution_json(s.itl_ms)},
          {"e2el_ms", distribution_json(s.e2el_ms)},
          {"errors", std::move(errors)}};
}

json result_json(const Summary& s, const json& config, const std::vector<RequestRecord>& records) {
  json requests = json::array();
  for (const RequestRecord& r : records) {
    json itl = json::array();
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    requests.push_back({{"prompt_tokens", r.prompt_tokens},
                        {"output_tokens", r.output_tokens},
                        {"ttft_ms", r.ttft_s >= 0 ? json(r.ttft_s * 1e3) : json(nullptr)},
                        {"e2el_ms", r.e2el_s >= 0 ? json(r.e2el_s * 1e3) : json(nullptr)},
                        {"itl_ms", std::move(itl)},
                        {"error", r.ok() ? json(nullptr) : json(r.error)}});
  }
  return {{"summary", summary_json(s)}, {"config", config}, {"requests", std::move(requests)}};
}

}  // namespace strata::loadgen
