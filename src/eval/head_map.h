// Sparse-attention head maps: the JSON file of `--sparse-heads` (and `--retrieval-ratio`,
// `--sink`, `--window`) resolved against a model's shape into the HeadModes that the
// engine runs with. Resolved once at start-up; only HeadModes travel inward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/head_modes.h"

namespace strata {

// Inputs of --sparse-heads / --retrieval-ratio / --sink / --window.
struct HeadMapOptions {
  std::string map_path;         // JSON head map; empty = none
  double retrieval_ratio = -1;  // fraction of heads kept full; < 0 = unset
  int32_t sink = -1;            // < 0 = from the map, else 4
  int32_t window = -1;          // < 0 = from the map, else 64
  bool enabled() const { return !map_path.empty() || retrieval_ratio >= 0; }
};

// Resolves the options for a model with the given shape. Map format:
//   {"sink": 4, "window": 64, "modes": [["full", "streaming"], ...], "scores": [[0.9, 0.1], ...]}
// one inner list per layer, one entry per KV head. `modes` wins when present; otherwise
// the top `retrieval_ratio` fraction of heads by score stay full (ties: lower index).
// Without a map, --retrieval-ratio keeps the first round(R * n_kv_heads) heads of every
// layer full (a structural split for benchmarking models whose heads were not scored).
// Returns dense modes when nothing is enabled. Throws strata::Error naming the bad field.
HeadModes resolve_head_modes(const HeadMapOptions& options, int64_t n_layers, int64_t n_kv_heads);
HeadModes parse_head_map(const std::string& json_text, const HeadMapOptions& options,
                         int64_t n_layers, int64_t n_kv_heads);

// Writes a head map (scores, and modes when `modes` is non-dense) as JSON text.
std::string head_map_json(const HeadModes& modes, const std::vector<std::vector<double>>& scores);

}  // namespace strata
