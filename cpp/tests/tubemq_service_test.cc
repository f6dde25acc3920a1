// The process-wide service: reference-counted start/stop, and timers that survive
// their own tasks' exceptions.
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "service/periodic_timer.h"
#include "service/tubemq_service.h"
#include "tubemq/service.h"

namespace tubemq::service {
namespace {

using namespace std::chrono_literals;

TEST(TubeMQService, StartsWithTheFirstLeaseStopsWithTheLastAndStartsAgain) {
  EXPECT_EQ(GetServiceState().io_threads, 0);
  for (int round = 0; round < 3; ++round) {
    {
      ServiceLease first;
      ServiceLease second;
      const ServiceState state = GetServiceState();
      EXPECT_EQ(state.users, 2);
      EXPECT_GT(state.io_threads, 0);
      // The engine really runs work.
      std::promise<void> ran;
      asio::post(first.engine().io(), [&ran] { ran.set_value(); });
      EXPECT_EQ(ran.get_future().wait_for(2s), std::future_status::ready);
      EXPECT_EQ(&first.engine(), &second.engine());
    }
    const ServiceState state = GetServiceState();
    EXPECT_EQ(state.users, 0);
    EXPECT_EQ(state.io_threads, 0);
  }
}

TEST(TubeMQService, ReleasingALeaseTwiceCountsOnce) {
  ServiceLease kept;
  {
    ServiceLease lease;
    lease.Release();
    lease.Release();
  }
  EXPECT_EQ(GetServiceState().users, 1);
  EXPECT_GT(GetServiceState().io_threads, 0);
}

TEST(PeriodicTimer, ThrowingTaskIsCaughtAndTheTimerReArms) {
  ServiceLease lease;
  auto timer = PeriodicTimer::Create(lease.engine().io().get_executor(), "test-timer");
  std::atomic<int> runs{0};
  std::promise<void> third;
  timer->Start(10ms, 0ms, [&] {
    const int run = ++runs;
    if (run == 3) third.set_value();
    if (run <= 3) throw std::runtime_error("task failure " + std::to_string(run));
  });
  EXPECT_EQ(third.get_future().wait_for(3s), std::future_status::ready);
  timer->Cancel();
  // Cancel takes effect on the executor; let anything queued drain.
  std::this_thread::sleep_for(50ms);
  const int after_cancel = runs.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(runs.load(), after_cancel);
}

TEST(PeriodicTimer, FireNowRunsAtOnceInsteadOfWaitingTheInterval) {
  ServiceLease lease;
  // The plain multi-threaded executor: Start() and FireNow() made back to back must
  // still take effect in order (the timer serialises itself).
  auto timer = PeriodicTimer::Create(lease.engine().io().get_executor(), "fire-now");
  std::promise<void> ran;
  std::atomic<bool> once{false};
  timer->Start(60000ms, 60000ms, [&] {
    if (!once.exchange(true)) ran.set_value();
  });
  const auto started = std::chrono::steady_clock::now();
  timer->FireNow();
  EXPECT_EQ(ran.get_future().wait_for(3s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  timer->Cancel();
}

}  // namespace
}  // namespace tubemq::service
