// The process-wide service: reference-counted start/stop, and timers that survive
// their own tasks' exceptions.
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "call_recorder.h"
#include "codec/rpc_envelope.h"
#include "scripted_server.h"
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

TEST(TubeMQService, RestartReusesTheEngineAndStateCountsConnections) {
  int generation = 0;
  for (int round = 0; round < 2; ++round) {
    ServiceLease lease;
    const ServiceState started = GetServiceState();
    EXPECT_EQ(started.users, 1);
    EXPECT_EQ(started.connections, 0u);
    if (round == 0) generation = started.generation;
    EXPECT_GT(started.generation, 0);
    EXPECT_EQ(started.generation, generation) << "a restart reuses the engine";
    // Connections are counted as the pool holds them (no traffic needed).
    auto a = lease.engine().pool().Get(meta::Endpoint{"127.0.0.1", 1});
    auto b = lease.engine().pool().Get(meta::Endpoint{"127.0.0.1", 2});
    EXPECT_EQ(GetServiceState().connections, 2u);
  }
  // Stopping closed and dropped the pooled connections.
  EXPECT_EQ(GetServiceState().connections, 0u);
  EXPECT_EQ(GetServiceState().io_threads, 0);
}

TEST(TubeMQService, StoppingFailsRequestsStillPending) {
  // A server that reads requests and never answers them.
  testing::ScriptedServer server([](testing::Peer& peer) {
    int32_t serial;
    while (peer.ReadRequest(&serial)) {
    }
  });
  std::promise<Status> outcome;
  auto future = outcome.get_future();
  std::atomic<int> calls{0};
  {
    ServiceLease lease;
    auto connection = lease.engine().pool().Get(meta::Endpoint{"127.0.0.1", server.port()});
    connection->Call(codec::EncodeRequestPayload(codec::Method::kProducerClose, 5000, "x"),
                     60000ms, [&](const Status& status, codec::RpcReply&&) {
                       if (++calls == 1) outcome.set_value(status);
                     });
    ASSERT_TRUE(testing::Eventually([&] { return connection->pending_count() == 1; }));
  }  // the last lease stops the service
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(future.get().code(), ErrorCode::kServiceStopped);
  EXPECT_EQ(calls.load(), 1);
}

TEST(TubeMQService, IoThreadsAreRecognised) {
  ServiceLease lease;
  EXPECT_FALSE(lease.engine().OnIoThread());
  std::promise<bool> on_io;
  asio::post(lease.engine().io(), [&] { on_io.set_value(lease.engine().OnIoThread()); });
  auto future = on_io.get_future();
  ASSERT_EQ(future.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(future.get());
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

TEST(PeriodicTimer, CancelledTimerCanBeStartedAgain) {
  ServiceLease lease;
  auto timer = PeriodicTimer::Create(lease.engine().io().get_executor(), "restart");
  std::atomic<int> first_runs{0};
  std::promise<void> first_ran;
  timer->Start(5ms, 0ms, [&] {
    if (++first_runs == 1) first_ran.set_value();
  });
  ASSERT_EQ(first_ran.get_future().wait_for(3s), std::future_status::ready);
  timer->Cancel();
  std::promise<void> second_ran;
  std::atomic<int> second_runs{0};
  timer->Start(5ms, 0ms, [&] {
    if (++second_runs == 2) second_ran.set_value();
  });
  ASSERT_EQ(second_ran.get_future().wait_for(3s), std::future_status::ready);
  timer->Cancel();
  // Once the restart took effect the first task never runs again.
  const int first_after_restart = first_runs.load();
  std::promise<void> drained;
  asio::post(lease.engine().io(), [&] { drained.set_value(); });
  drained.get_future().wait_for(2s);
  EXPECT_EQ(first_runs.load(), first_after_restart);
}

TEST(PeriodicTimer, TaskThatCancelsItsTimerRunsOnce) {
  ServiceLease lease;
  auto timer = PeriodicTimer::Create(lease.engine().io().get_executor(), "self-cancel");
  std::atomic<int> runs{0};
  std::promise<void> ran;
  timer->Start(1ms, 0ms, [&] {
    if (++runs == 1) {
      timer->Cancel();
      ran.set_value();
    }
  });
  ASSERT_EQ(ran.get_future().wait_for(3s), std::future_status::ready);
  // A later FireNow() on a cancelled timer does nothing either; give it a chance to run.
  timer->FireNow();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(runs.load(), 1);
}

TEST(PeriodicTimer, TaskThatRestartsItsTimerWithAnotherTaskSwitchesOver) {
  // The running task is replaced while it runs; it must stay intact until it returns
  // (run under AddressSanitizer, this used to be a use after free).
  ServiceLease lease;
  auto timer = PeriodicTimer::Create(lease.engine().io().get_executor(), "self-restart");
  std::atomic<int> first_runs{0};
  std::promise<void> second_ran;
  std::atomic<int> second_runs{0};
  auto second = [&] {
    if (++second_runs == 1) second_ran.set_value();
  };
  std::string first_state = "first task state";
  timer->Start(1ms, 0ms, [&, first_state] {
    ++first_runs;
    timer->Start(1ms, 0ms, second);
    EXPECT_EQ(first_state, "first task state");  // still readable after the restart
  });
  ASSERT_EQ(second_ran.get_future().wait_for(3s), std::future_status::ready);
  timer->Cancel();
  EXPECT_EQ(first_runs.load(), 1);
}

}  // namespace
}  // namespace tubemq::service
