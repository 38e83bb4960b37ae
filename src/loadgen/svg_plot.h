// A self-contained SVG picture of one benchmark: cumulative distributions of TTFT,
// TPOT and E2E latency (successful requests), and output tokens/s per second of the
// run, with the summary's headline figures in the title.
#pragma once

#include <string>
#include <vector>

#include "loadgen/stats.h"

namespace strata::loadgen {

std::string render_svg(const std::vector<RequestRecord>& records, const Summary& summary,
                       const std::string& title);

// A "nice" axis step (1, 2 or 5 x 10^k) giving about `ticks` intervals over [0, max].
double nice_step(double max, int ticks = 5);

}  // namespace strata::loadgen
