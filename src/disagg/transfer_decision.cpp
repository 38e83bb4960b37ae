#include "disagg/transfer_decision.h"

#include <cstdio>

namespace strata::disagg {

TransferDecision decide_transfer(uint64_t bytes, int64_t lacking_tokens, double link_bytes_per_s,
                                 double prefill_tokens_per_s) {
  TransferDecision d;
  char buf[160];
  if (bytes == 0) {
    d.reason = "no full block to send";
    return d;
  }
  if (lacking_tokens <= 0) {
    d.reason = "the decode replica holds every full block already";
    return d;
  }
  d.transfer_s = link_bytes_per_s > 0 ? static_cast<double>(bytes) / link_bytes_per_s : 1e30;
  if (prefill_tokens_per_s <= 0) {
    d.transfer = true;
    std::snprintf(buf, sizeof buf, "no prefill rate measured yet; transfer %.4f s", d.transfer_s);
    d.reason = buf;
    return d;
  }
  d.recompute_s = static_cast<double>(lacking_tokens) / prefill_tokens_per_s;
  d.transfer = d.transfer_s < d.recompute_s;
  std::snprintf(buf, sizeof buf, "transfer %.4f s (%.3g MB/s) %s recompute %.4f s (%.4g tok/s)",
                d.transfer_s, link_bytes_per_s / 1e6, d.transfer ? "<" : ">=", d.recompute_s,
                prefill_tokens_per_s);
  d.reason = buf;
  return d;
}

void TransferRates::observe_send(uint64_t bytes, double seconds) {
  if (seconds <= 0 || bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  link_ = (1 - alpha_) * link_ + alpha_ * (static_cast<double>(bytes) / seconds);
}

void TransferRates::observe_prefill(int64_t tokens, double seconds) {
  if (seconds <= 0 || tokens <= 0) return;
  const double rate = static_cast<double>(tokens) / seconds;
  std::lock_guard<std::mutex> lock(mutex_);
  prefill_ = prefill_ > 0 ? (1 - alpha_) * prefill_ + alpha_ * rate : rate;
}

double TransferRates::link_bytes_per_s() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return link_;
}

double TransferRates::prefill_tokens_per_s() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prefill_;
}

}  // namespace strata::disagg
