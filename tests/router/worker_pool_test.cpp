// The relay pool model-free: at most max_workers jobs run at once, at most max_queue
// wait, the rest are refused; stop() runs what was queued.
#include "router/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

namespace strata::router {
namespace {

using namespace std::chrono_literals;

TEST(WorkerPoolTest, BoundsRunningAndWaitingJobs) {
  WorkerPool pool(2, 3);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<int> running{0}, peak{0}, ran{0};
  auto job = [&] {
    const int now = ++running;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    open.wait_for(5s);
    --running;
    ++ran;
  };
  int accepted = 0;
  for (int i = 0; i < 8; ++i) accepted += pool.try_submit(job) ? 1 : 0;
  EXPECT_EQ(accepted, 5);  // 2 running + 3 waiting
  const auto st = pool.stats();
  EXPECT_EQ(st.workers, 2u);
  EXPECT_EQ(st.rejected, 3u);
  gate.set_value();
  pool.stop(10);
  EXPECT_EQ(ran.load(), 5);
  EXPECT_LE(peak.load(), 2);
  EXPECT_FALSE(pool.try_submit(job));  // stopped
}

TEST(WorkerPoolTest, ReusesIdleWorkers) {
  WorkerPool pool(4, 0);
  for (int i = 0; i < 50; ++i) {
    std::promise<void> done;
    auto f = done.get_future();
    ASSERT_TRUE(pool.try_submit([&] { done.set_value(); }));
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    // The worker goes back to idle right after the job; give it that moment.
    for (int k = 0; k < 100 && pool.stats().busy > 0; ++k) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LE(pool.stats().workers, 2u);  // one at a time: no thread per job
}

TEST(WorkerPoolTest, ZeroWorkersIsAnError) {
  EXPECT_ANY_THROW(WorkerPool(0, 1));
}

}  // namespace
}  // namespace strata::router
