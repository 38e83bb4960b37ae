#include "sample/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace strata {

void fill_logprobs(std::span<const float> src, int32_t k_wanted, std::vector<int32_t>& order,
                   TokenLogprob& out) {
  const size_t n_vocab = src.size();
  if (order.size() != n_vocab) order.resize(n_vocab);
  double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
  for (float x : src) mx = std::max(mx, static_cast<double>(x));
  for (float x : src) sum += std::exp(static_cast<double>(x) - mx);
  const double log_z = mx + std::log(sum);
  const size_t k = std::min(static_cast<size_t>(std::max(k_wanted, 0)), n_vocab);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(),
                    [&](int32_t a, int32_t b) {
                      return src[static_cast<size_t>(a)] > src[static_cast<size_t>(b)] ||
                             (src[static_cast<size_t>(a)] == src[static_cast<size_t>(b)] && a < b);
                    });
  out.top.clear();
  for (size_t j = 0; j < k; ++j) {
    const float x = src[static_cast<size_t>(order[j])];
    // A grammar-masked row has -inf logits: those tokens cannot come and are not listed
    // (sorted, so the rest are masked too).
    if (std::isinf(x) && x < 0) break;
    out.top.emplace_back(order[j], static_cast<float>(x - log_z));
  }
  out.logprob = static_cast<float>(-log_z);
  out.logprob += src[static_cast<size_t>(out.token)];
}

void score_prompt_rows(std::span<const float> rows, int64_t n_vocab, int64_t first_pos,
                       std::span<const int32_t> prompt, int32_t k, std::vector<int32_t>& order,
                       std::vector<TokenLogprob>& out) {
  if (n_vocab <= 0 || rows.size() % static_cast<size_t>(n_vocab) != 0)
    throw Error("prompt logprobs: rows are not a whole number of vocabulary rows");
  const auto n_rows = static_cast<int64_t>(rows.size()) / n_vocab;
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t next = first_pos + j + 1;  // the prompt token this row predicts
    if (next >= static_cast<int64_t>(prompt.size())) break;
    TokenLogprob lp;
    lp.token = prompt[static_cast<size_t>(next)];
    fill_logprobs(rows.subspan(static_cast<size_t>(j * n_vocab), static_cast<size_t>(n_vocab)), k,
                  order, lp);
    out.push_back(std::move(lp));
  }
}

}  // namespace strata
