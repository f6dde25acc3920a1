#include "service/client_session.h"

#include <utility>

#include "log/log.h"
#include "service/retry_pause.h"

namespace tubemq::service {

ClientSession::ClientSession(SessionClient& client, std::mutex& guard, asio::io_context& io,
                             Settings settings)
    : client_(client),
      guard_(guard),
      io_(io),
      settings_(std::move(settings)),
      heartbeat_timer_(PeriodicTimer::Create(io.get_executor(), settings_.name + "-heartbeat")) {}

void ClientSession::Start(Done done) {
  Status answer;
  bool registers = false;
  {
    std::lock_guard<std::mutex> lock(guard_);
    registers = life_.BeginStart(("the " + settings_.name).c_str(), answer);
  }
  if (!registers) {
    done(answer);  // never called with the guard held
    return;
  }
  Register(settings_.register_attempts,
           [this, keep = client_.Self(), done = std::move(done)](const Status& status) {
             {
               std::lock_guard<std::mutex> lock(guard_);
               life_.EndStart(status.ok());
             }
             if (status.ok()) client_.OnRunning();
             done(status);
           });
}

void ClientSession::Register(int attempts, Done done) {
  client_.RegisterOnce([this, keep = client_.Self(), attempts,
                        done = std::move(done)](const Status& result) mutable {
    AfterAttempt(result, attempts, std::move(done));
  });
}

void ClientSession::AfterAttempt(const Status& result, int attempts_left, Done done) {
  if (result.ok() || attempts_left <= 1 || !client_.RetryMayCure(result)) {
    done(result);
    return;
  }
  // Closed while registering (e.g. a start interrupted by Ctrl-C): no retry. A pending
  // retry timer would also hold the I/O service busy and delay its stop.
  const std::string closed_text = "the " + settings_.name + " was closed while registering";
  if (Closing()) {
    done(Status(ErrorCode::kClientShutdown, closed_text));
    return;
  }
  TUBEMQ_LOG_WARN(settings_.name << " registration failed (" << result.message()
                                 << "); retrying");
  auto keep = client_.Self();
  AfterRetryPause(
      io_, settings_.register_retry_wait, [this, keep] { return !Closing(); }, closed_text,
      std::move(done), [this, keep, attempts_left](Done next_done) {
        Register(attempts_left - 1, std::move(next_done));
      });
}

void ClientSession::ScheduleHeartbeats(std::chrono::milliseconds interval,
                                       std::chrono::milliseconds first_delay) {
  std::weak_ptr<SessionClient> weak = client_.Self();
  // Decided and started under the guard: Close() sets the state under it before it
  // cancels the timer, so a schedule started here is either cancelled by that Close()
  // or never started.
  std::lock_guard<std::mutex> lock(guard_);
  if (!life_.live()) return;
  heartbeat_timer_->Start(interval, first_delay, [weak] {
    if (auto client = weak.lock()) client->HeartbeatTick();
  });
}

bool ClientSession::Closing() const {
  std::lock_guard<std::mutex> lock(guard_);
  return life_.closing();
}

void ClientSession::Close(Done done) {
  bool registered = false;
  bool closes = false;
  {
    std::lock_guard<std::mutex> lock(guard_);
    closes = life_.BeginClose(registered);
  }
  if (!closes) {
    done(Status::OK());  // never called with the guard held
    return;
  }
  heartbeat_timer_->Cancel();
  client_.StopSchedules();
  auto finish = [this, keep = client_.Self(), done = std::move(done)](const Status& status) {
    {
      std::lock_guard<std::mutex> lock(guard_);
      life_.EndClose();
    }
    client_.OnClosed();
    done(status);
  };
  if (!registered) {
    client_.LeaveUnregistered();
    finish(Status::OK());
    return;
  }
  client_.Leave(std::move(finish));
}

}  // namespace tubemq::service
