#include "eval/head_map.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "core/error.h"

namespace strata {
namespace {

using nlohmann::json;

void check_sink_window(const HeadModes& m) {
  if (m.sink < 0) throw Error("head map: sink must be >= 0");
  if (m.window < 1) throw Error("head map: window must be >= 1");
}

// Keeps the `n_full` best-scored heads full, the rest streaming.
void cut_by_scores(HeadModes& m, const std::vector<double>& scores, double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0)) throw Error("--retrieval-ratio: must be in [0, 1]");
  const auto total = static_cast<int64_t>(scores.size());
  const auto n_full = static_cast<int64_t>(std::llround(ratio * static_cast<double>(total)));
  std::vector<int64_t> order(static_cast<size_t>(total));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)];
  });
  m.streaming.assign(static_cast<size_t>(total), 1);
  for (int64_t i = 0; i < n_full; ++i)
    m.streaming[static_cast<size_t>(order[static_cast<size_t>(i)])] = 0;
}

const json& per_layer_list(const json& doc, const char* key, int64_t n_layers, int64_t n_kv_heads) {
  const json& v = doc.at(key);
  if (!v.is_array() || static_cast<int64_t>(v.size()) != n_layers) {
    throw Error(std::string("head map: \"") + key + "\" must list " + std::to_string(n_layers) +
                " layers");
  }
  for (size_t l = 0; l < v.size(); ++l) {
    if (!v[l].is_array() || static_cast<int64_t>(v[l].size()) != n_kv_heads) {
      throw Error(std::string("head map: \"") + key + "\"[" + std::to_string(l) + "] must list " +
                  std::to_string(n_kv_heads) + " KV heads");
    }
  }
  return v;
}

}  // namespace

HeadModes parse_head_map(const std::string& text, const HeadMapOptions& o, int64_t n_layers,
                         int64_t n_kv_heads) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(std::string("head map: invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw Error("head map: expected a JSON object");
  HeadModes m;
  m.n_layers = n_layers;
  m.n_kv_heads = n_kv_heads;
  auto read_int = [&](const char* key, int32_t& out) {
    if (!doc.contains(key)) return;
    const json& v = doc[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 30)) {
      throw Error(std::string("head map: \"") + key + "\" must be a non-negative integer");
    }
    out = static_cast<int32_t>(v.get<int64_t>());
  };
  read_int("sink", m.sink);
  read_int("window", m.window);
  if (o.sink >= 0) m.sink = o.sink;
  if (o.window >= 0) m.window = o.window;
  check_sink_window(m);

  if (doc.contains("modes")) {
    const json& modes = per_layer_list(doc, "modes", n_layers, n_kv_heads);
    m.streaming.assign(static_cast<size_t>(n_layers * n_kv_heads), 0);
    for (int64_t l = 0; l < n_layers; ++l) {
      for (int64_t h = 0; h < n_kv_heads; ++h) {
        const json& v = modes[static_cast<size_t>(l)][static_cast<size_t>(h)];
        if (v == "streaming") {
          m.streaming[static_cast<size_t>(l * n_kv_heads + h)] = 1;
        } else if (v != "full") {
          throw Error("head map: modes[" + std::to_string(l) + "][" + std::to_string(h) +
                      "] must be \"full\" or \"streaming\"");
        }
      }
    }
    return m;
  }
  if (!doc.contains("scores")) throw Error("head map: needs \"modes\" or \"scores\"");
  if (o.retrieval_ratio < 0) throw Error("head map has only scores: give --retrieval-ratio");
  const json& scores = per_layer_list(doc, "scores", n_layers, n_kv_heads);
  std::vector<double> flat;
  for (const json& layer : scores) {
    for (const json& v : layer) {
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        throw Error("head map: scores must be finite numbers");
      flat.push_back(v.get<double>());
    }
  }
  cut_by_scores(m, flat, o.retrieval_ratio);
  return m;
}

HeadModes resolve_head_modes(const HeadMapOptions& o, int64_t n_layers, int64_t n_kv_heads) {
  HeadModes m;
  m.n_layers = n_layers;
  m.n_kv_heads = n_kv_heads;
  if (!o.enabled()) return m;
  if (!o.map_path.empty()) {
    std::ifstream in(o.map_path);
    if (!in) throw Error("--sparse-heads: cannot read " + o.map_path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_head_map(ss.str(), o, n_layers, n_kv_heads);
  }
  if (!(o.retrieval_ratio >= 0.0 && o.retrieval_ratio <= 1.0)) {
    throw Error("--retrieval-ratio: must be in [0, 1]");
  }
  if (o.sink >= 0) m.sink = o.sink;
  if (o.window >= 0) m.window = o.window;
  check_sink_window(m);
  const auto full_per_layer =
      static_cast<int64_t>(std::llround(o.retrieval_ratio * static_cast<double>(n_kv_heads)));
  m.streaming.assign(static_cast<size_t>(n_layers * n_kv_heads), 1);
  for (int64_t l = 0; l < n_layers; ++l) {
    for (int64_t h = 0; h < full_per_layer; ++h)
      m.streaming[static_cast<size_t>(l * n_kv_heads + h)] = 0;
  }
  return m;
}

std::string head_map_json(const HeadModes& m, const std::vector<std::vector<double>>& scores) {
  json doc;
  doc["sink"] = m.sink;
  doc["window"] = m.window;
  if (!m.dense()) {
    json modes = json::array();
    for (int64_t l = 0; l < m.n_layers; ++l) {
      json layer = json::array();
      for (int64_t h = 0; h < m.n_kv_heads; ++h)
        layer.push_back(m.is_streaming(l, h) ? "streaming" : "full");
      modes.push_back(layer);
    }
    doc["modes"] = modes;
  }
  if (!scores.empty()) doc["scores"] = scores;
  return doc.dump(1) + "\n";
}

}  // namespace strata
