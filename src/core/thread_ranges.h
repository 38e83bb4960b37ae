// One-off parallel work outside a ThreadPool (a model's load, before any pool exists):
// [0, n) split into ranges, each run on a thread of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace strata {

// fn(begin, end) over [0, n) in at most hardware_concurrency() ranges of at least
// min_range items each (fewer ranges when n is small), range starts multiples of align;
// the first range runs on the calling thread. Returns when every range is done.
template <class Fn>
void run_in_thread_ranges(int64_t n, int64_t min_range, int64_t align, Fn&& fn) {
  const int64_t threads = std::clamp<int64_t>(n / std::max<int64_t>(min_range, 1), 1,
                                              std::max(1u, std::thread::hardware_concurrency()));
  const int64_t a = std::max<int64_t>(align, 1);
  const int64_t step = ((n + threads - 1) / threads + a - 1) / a * a;
  std::vector<std::jthread> workers;
  for (int64_t t = 1; t < threads && t * step < n; ++t)
    workers.emplace_back([&fn, n, t, step] { fn(t * step, std::min(n, (t + 1) * step)); });
  fn(int64_t{0}, std::min(n, step));
}

}  // namespace strata
