// Transfer or recompute: whether shipping a prompt's KV blocks to the decode replica is
// faster than letting it prefill them itself (docs/DISAGGREGATION.md). Plain arithmetic
// over two measured rates, each an exponential average seeded by an estimate:
//   transfer_s  = message bytes / link bytes per second (measured from past sends,
//                 seeded by --kv-link-gbps and capped by --kv-rate-limit)
//   recompute_s = tokens the decode replica lacks / prefill tokens per second (measured
//                 from this replica's own prefills)
// Transfer when transfer_s < recompute_s. Before any prefill was measured there is no
// recompute estimate, and the decision is to transfer (which measures one).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace strata::disagg {

struct TransferDecision {
  bool transfer = false;
  double transfer_s = 0;   // estimated
  double recompute_s = 0;  // estimated; 0 when unknown
  std::string reason;
};

TransferDecision decide_transfer(uint64_t bytes, int64_t lacking_tokens, double link_bytes_per_s,
                                 double prefill_tokens_per_s);

// The two rates, thread-safe. `alpha` weighs each new sample.
class TransferRates {
 public:
  TransferRates(double link_bytes_per_s, double alpha = 0.3)
      : link_(link_bytes_per_s), alpha_(alpha) {}
  // A send of `bytes` that took `seconds` (connect, write, import, reply).
  void observe_send(uint64_t bytes, double seconds);
  // A prefill that computed `tokens` in `seconds`.
  void observe_prefill(int64_t tokens, double seconds);
  double link_bytes_per_s() const;
  double prefill_tokens_per_s() const;  // 0 until one was measured

 private:
  mutable std::mutex mutex_;
  double link_, prefill_ = 0, alpha_;
};

}  // namespace strata::disagg
