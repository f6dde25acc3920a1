// The session both clients live in at the master (service/client_session.h): what is
// retried when registering, that close stops retries and heartbeats, and the order of
// the steps a client is asked for. The client here records its steps and answers
// registrations from a script.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "service/client_session.h"
#include "service/tubemq_service.h"

namespace tubemq::service {
namespace {

using namespace std::chrono_literals;

class ScriptedClient : public SessionClient, public std::enable_shared_from_this<ScriptedClient> {
 public:
  ScriptedClient(IoEngine& engine, int attempts, std::deque<Status> answers)
      : answers_(std::move(answers)),
        session(*this, mutex_, engine.io(), {"client", attempts, std::chrono::milliseconds(20)}) {}

  void RegisterOnce(Done done) override {
    Status answer;
    {
      std::lock_guard<std::mutex> lock(steps_mutex_);
      steps_.push_back("register");
      answer = answers_.empty() ? Status::OK() : answers_.front();
      if (!answers_.empty()) answers_.pop_front();
    }
    done(answer);
  }
  bool RetryMayCure(const Status& failure) const override {
    return failure.code() != ErrorCode::kBadRequest;
  }
  void OnRunning() override {
    Record("running");
    session.ScheduleHeartbeats(10ms, 0ms);
  }
  void HeartbeatTick() override { ++ticks; }
  void StopSchedules() override { Record("stop"); }
  void Leave(Done done) override {
    Record("leave");
    done(Status::OK());
  }
  void LeaveUnregistered() override { Record("leave-unregistered"); }
  void OnClosed() override { Record("closed"); }
  std::shared_ptr<SessionClient> Self() override { return shared_from_this(); }

  std::vector<std::string> steps() const {
    std::lock_guard<std::mutex> lock(steps_mutex_);
    return steps_;
  }
  bool running() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return session.running();
  }

  std::atomic<int> ticks{0};

 private:
  void Record(const char* step) {
    std::lock_guard<std::mutex> lock(steps_mutex_);
    steps_.emplace_back(step);
  }

  mutable std::mutex mutex_;  // the client's own mutex, which its session shares
  mutable std::mutex steps_mutex_;
  std::vector<std::string> steps_;
  std::deque<Status> answers_;

 public:
  ClientSession session;
};

Status Wait(ClientSession& session, bool start) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto done = [promise](const Status& status) { promise->set_value(status); };
  if (start) session.Start(done);
  else session.Close(done);
  auto future = promise->get_future();
  EXPECT_EQ(future.wait_for(5s), std::future_status::ready);
  return future.get();
}

Status Unavailable() { return Status(ErrorCode::kServiceUnavailable, "not yet"); }

TEST(ClientSession, RetriesWhatARetryMayCureThenRunsAndHeartbeats) {
  ServiceLease lease;
  auto client = std::make_shared<ScriptedClient>(lease.engine(), 3,
                                                 std::deque<Status>{Unavailable(), Unavailable()});
  EXPECT_TRUE(Wait(client->session, true).ok());
  EXPECT_TRUE(client->running());
  EXPECT_EQ(client->steps(),
            (std::vector<std::string>{"register", "register", "register", "running"}));
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (client->ticks < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(client->ticks.load(), 3);
  // A second Start() answers at once, without registering again.
  EXPECT_TRUE(Wait(client->session, true).ok());
  EXPECT_EQ(client->steps().size(), 4u);

  EXPECT_TRUE(Wait(client->session, false).ok());
  EXPECT_EQ(client->steps(), (std::vector<std::string>{"register", "register", "register",
                                                       "running", "stop", "leave", "closed"}));
  // No heartbeat after close.
  std::this_thread::sleep_for(50ms);
  const int after_close = client->ticks.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(client->ticks.load(), after_close);
  // A second Close() answers OK at once; a closed client does not start again.
  EXPECT_TRUE(Wait(client->session, false).ok());
  const Status again = Wait(client->session, true);
  EXPECT_EQ(again.code(), ErrorCode::kClientShutdown);
  EXPECT_EQ(again.message(), "the client is closed");
}

TEST(ClientSession, ARefusalIsFinalAndTheClientMayStartAgain) {
  ServiceLease lease;
  const Status refusal(ErrorCode::kBadRequest, "bad group");
  auto client =
      std::make_shared<ScriptedClient>(lease.engine(), 5, std::deque<Status>{refusal});
  const Status first = Wait(client->session, true);
  EXPECT_EQ(first.code(), ErrorCode::kBadRequest);
  EXPECT_EQ(client->steps(), (std::vector<std::string>{"register"}));
  EXPECT_FALSE(client->running());
  EXPECT_TRUE(Wait(client->session, true).ok());  // New again: this one registers
  EXPECT_TRUE(client->running());
  EXPECT_TRUE(Wait(client->session, false).ok());
}

TEST(ClientSession, AttemptsRunOutWithTheLastFailure) {
  ServiceLease lease;
  auto client = std::make_shared<ScriptedClient>(
      lease.engine(), 2, std::deque<Status>{Unavailable(), Unavailable(), Unavailable()});
  EXPECT_EQ(Wait(client->session, true).code(), ErrorCode::kServiceUnavailable);
  EXPECT_EQ(client->steps(), (std::vector<std::string>{"register", "register"}));
  // Never registered: close cleans up locally and does not leave the master.
  EXPECT_TRUE(Wait(client->session, false).ok());
  EXPECT_EQ(client->steps(), (std::vector<std::string>{"register", "register", "stop",
                                                       "leave-unregistered", "closed"}));
}

TEST(ClientSession, CloseDuringTheRetryPauseEndsTheStartWithShutdown) {
  ServiceLease lease;
  std::deque<Status> failures(50, Unavailable());
  auto client = std::make_shared<ScriptedClient>(lease.engine(), 50, failures);
  auto started = std::make_shared<std::promise<Status>>();
  client->session.Start([started](const Status& status) { started->set_value(status); });
  std::this_thread::sleep_for(30ms);  // within the retries
  EXPECT_TRUE(Wait(client->session, false).ok());
  auto outcome = started->get_future();
  ASSERT_EQ(outcome.wait_for(3s), std::future_status::ready);
  const Status status = outcome.get();
  EXPECT_EQ(status.code(), ErrorCode::kClientShutdown);
  EXPECT_EQ(status.message(), "the client was closed while registering");
  EXPECT_LT(client->steps().size(), 50u);
}

}  // namespace
}  // namespace tubemq::service
