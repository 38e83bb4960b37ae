// A switch of the decode path measured against itself in one process: decode steps
// alternate between the switch on and off every few tokens, so both sides see the same
// memory-bandwidth phases of a shared machine (which move tokens/s by 30% between runs
// here, far more than the changes this compares).
//
//   decode_ab_bench MODEL.gguf [SWITCH] [THREADS] [ROUNDS] [TOKENS]
//   SWITCH: fused_matmul_steps (default) | fused_attention
//
// Each round starts a new sequence and decodes TOKENS tokens (default 128) after a
// one-token prompt, 4 tokens per side in turn. Prints the median step time of each side
// and the median ratio of neighbouring 4-token blocks (off / on: above 1 means the switch
// makes decode faster).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/quant/traits.h"
#include "model/model.h"
#include "runner/sequence_runner.h"

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: %s MODEL.gguf [fused_matmul_steps|fused_attention] [THREADS] [ROUNDS] [TOKENS]\n",
        argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const std::string which = argc > 2 ? argv[2] : "fused_matmul_steps";
  const int threads = argc > 3 ? std::atoi(argv[3]) : strata::ThreadPool::default_threads();
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const int tokens = argc > 5 ? std::atoi(argv[5]) : 128;
  if (which != "fused_matmul_steps" && which != "fused_attention") {
    std::fprintf(stderr, "unknown switch '%s'\n", which.c_str());
    return 2;
  }
  try {
    auto model = strata::Model::load(path);
    auto set = [&](bool on) {
      if (which == "fused_matmul_steps")
        model->set_fused_matmul_steps(on);
      else
        model->set_fused_attention(on);
    };
    strata::ThreadPool pool(threads);
    strata::SequenceRunnerOptions options;
    options.context_length = tokens + 8;
    options.kv_type =
        strata::kernels::cpu_has_avx512_bf16() ? strata::DType::BF16 : strata::DType::F16;
    strata::SequenceRunner runner(*model, pool, options);
    constexpr int kBlock = 4;
    std::vector<double> on_us, off_us, ratios;
    for (int r = 0; r < rounds; ++r) {
      runner.reset();
      int32_t token = 1;
      runner.feed(std::vector<int32_t>{token});
      double block_sum[2] = {0, 0};
      for (int i = 0; i < tokens; ++i) {
        const bool on = (i / kBlock) % 2 == 0;
        set(on);
        token = 3 + (i * 37) % 1000;
        const auto t0 = std::chrono::steady_clock::now();
        runner.feed(std::span<const int32_t>(&token, 1));
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        (on ? on_us : off_us).push_back(us);
        block_sum[on ? 1 : 0] += us;
        if (i % (2 * kBlock) == 2 * kBlock - 1) {  // an on block, then an off block
          ratios.push_back(block_sum[0] / block_sum[1]);
          block_sum[0] = block_sum[1] = 0;
        }
      }
    }
    std::printf(
        "%s: on %.1f us/token, off %.1f us/token (medians of %zu steps each); off/on %.4f (median "
        "of %zu block pairs)\n",
        which.c_str(), median(on_us), median(off_us), on_us.size(), median(ratios), ratios.size());
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
