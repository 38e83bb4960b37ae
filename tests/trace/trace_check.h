// Parses a trace file and checks the trace-event format: a {"traceEvents": [...]} object
// whose every event has name, ph, ts, pid and tid; complete events ("X") have dur >= 0
// and nest properly per track (a span lies wholly inside another or after it). Returns
// the spans with their parents so tests can ask what contains what.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace strata::testing {

struct TraceSpanInfo {
  std::string name;
  int64_t tid = 0;
  double ts = 0, dur = 0;
  int parent = -1;  // index into ParsedTrace::spans; -1 = top level on its track
  nlohmann::json args;
  double end() const { return ts + dur; }
};

struct ParsedTrace {
  nlohmann::json root;
  std::vector<TraceSpanInfo> spans;        // in file order
  std::vector<nlohmann::json> instants;    // "ph":"i" events
  std::map<int64_t, std::string> threads;  // tid -> thread_name

  std::vector<int> named(const std::string& name) const {
    std::vector<int> out;
    for (size_t i = 0; i < spans.size(); ++i) {
      if (spans[i].name == name) out.push_back(static_cast<int>(i));
    }
    return out;
  }
  std::vector<int> children(int parent) const {
    std::vector<int> out;
    for (size_t i = 0; i < spans.size(); ++i) {
      if (spans[i].parent == parent) out.push_back(static_cast<int>(i));
    }
    return out;
  }
  int count_children(int parent, const std::string& name) const {
    int n = 0;
    for (int c : children(parent)) n += spans[static_cast<size_t>(c)].name == name;
    return n;
  }
  std::vector<nlohmann::json> instants_named(const std::string& name) const {
    std::vector<nlohmann::json> out;
    for (const auto& e : instants) {
      if (e["name"] == name) out.push_back(e);
    }
    return out;
  }
};

inline ParsedTrace parse_trace_text(const std::string& text) {
  ParsedTrace t;
  t.root = nlohmann::json::parse(text);  // throws on invalid JSON
  EXPECT_TRUE(t.root.is_object());
  EXPECT_TRUE(t.root.contains("traceEvents"));
  EXPECT_TRUE(t.root["traceEvents"].is_array());
  EXPECT_EQ(t.root.value("displayTimeUnit", ""), "ms");
  for (const auto& e : t.root["traceEvents"]) {
    EXPECT_TRUE(e.is_object());
    for (const char* key : {"name", "ph", "ts", "pid", "tid"}) {
      EXPECT_TRUE(e.contains(key)) << "event without " << key << ": " << e.dump();
    }
    if (!e.contains("ph") || !e.contains("ts") || !e.contains("tid") || !e.contains("name"))
      continue;
    EXPECT_TRUE(e["name"].is_string());
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_TRUE(e["pid"].is_number_integer());
    EXPECT_TRUE(e["tid"].is_number_integer());
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "X") {
      EXPECT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
      TraceSpanInfo s;
      s.name = e["name"].get<std::string>();
      s.tid = e["tid"].get<int64_t>();
      s.ts = e["ts"].get<double>();
      s.dur = e.value("dur", -1.0);
      EXPECT_GE(s.dur, 0.0) << e.dump();
      s.args = e.value("args", nlohmann::json::object());
      t.spans.push_back(std::move(s));
    } else if (ph == "i") {
      EXPECT_EQ(e.value("s", ""), "t");
      t.instants.push_back(e);
    } else if (ph == "M") {
      if (e["name"] == "thread_name")
        t.threads[e["tid"].get<int64_t>()] = e["args"]["name"].get<std::string>();
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  // Nesting per track: in (ts, longest first) order, each span must lie inside the
  // innermost open span that has not ended before it starts.
  constexpr double kEps = 1e-6;
  std::vector<int> order(t.spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto &x = t.spans[static_cast<size_t>(a)], &y = t.spans[static_cast<size_t>(b)];
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.ts != y.ts) return x.ts < y.ts;
    return x.dur > y.dur;
  });
  std::vector<int> stack;
  int64_t tid = -1;
  for (int i : order) {
    auto& s = t.spans[static_cast<size_t>(i)];
    if (s.tid != tid) stack.clear(), tid = s.tid;
    while (!stack.empty()) {
      const auto& p = t.spans[static_cast<size_t>(stack.back())];
      // A zero-length span holds nothing: back-to-back empty spans (final_norm and
      // lm_head of a step without logit rows) share one timestamp and are siblings.
      if (p.dur > 0 && s.ts >= p.ts - kEps && s.end() <= p.end() + kEps) break;  // inside p
      EXPECT_GE(s.ts, p.end() - kEps) << s.name << " overlaps the end of " << p.name;
      stack.pop_back();
    }
    if (!stack.empty()) s.parent = stack.back();
    stack.push_back(i);
  }
  return t;
}

inline ParsedTrace parse_trace_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_trace_text(ss.str());
}

}  // namespace strata::testing
