// ClientSession: a client's life at the master, one component for the producer and the
// consumer (docs/design.md §1). It decides *when*: Start() registers, retrying what a
// retry may cure, and then keeps the heartbeat schedule; Close() stops the schedules,
// lets the client leave, and ends the life (ClientLife's states). The client decides
// *what*: the requests a register, a heartbeat and leaving send, and what their replies
// change (SessionClient).
//
//   producer  RegisterRequestP2M / HeartRequestP2M / CloseRequestP2M (after its sends drain)
//   consumer  its Membership's register and heartbeat / CloseRequestC2M (after handing its
//             partitions back at their brokers)
//
// The session lives inside its client and shares the client's mutex (`guard`): the
// client reads running()/closing() under that mutex together with its own state, and
// the session makes its transitions under it. Neither holds it while calling out.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "service/client_life.h"
#include "service/periodic_timer.h"
#include "tubemq/status.h"

namespace tubemq::service {

// What a client does at each step of its session; implemented by the producer and the
// consumer. Every call comes without the client's mutex held.
class SessionClient {
 public:
  using Done = std::function<void(const Status&)>;

  virtual ~SessionClient() = default;

  // One register request to the master, its reply applied; `done` gets the verdict.
  virtual void RegisterOnce(Done done) = 0;
  // Whether another attempt may cure a failed registration; a refusal is final.
  virtual bool RetryMayCure(const Status& failure) const = 0;
  // Registered: the client starts its schedules (ClientSession::ScheduleHeartbeats
  // among them).
  virtual void OnRunning() = 0;
  // One tick of the heartbeat schedule.
  virtual void HeartbeatTick() = 0;
  // Close began: the client's other schedules stop (the heartbeat's is the session's).
  virtual void StopSchedules() {}
  // Close of a registered client: give back what it holds and tell the master it
  // leaves; `done` with the master's answer.
  virtual void Leave(Done done) = 0;
  // Close of a client that never registered: local clean-up only.
  virtual void LeaveUnregistered() {}
  // The life has ended (Closed): fail whatever still waits for the session.
  virtual void OnClosed() {}
  // The client itself, kept alive by the session's pending continuations.
  virtual std::shared_ptr<SessionClient> Self() = 0;
};

class ClientSession {
 public:
  using Done = SessionClient::Done;

  struct Settings {
    std::string name;  // "producer", "consumer": for logs and "the producer is closed"
    int register_attempts = 1;
    std::chrono::milliseconds register_retry_wait{0};
  };

  // `client` and `guard` belong to the client that holds this session as a member.
  ClientSession(SessionClient& client, std::mutex& guard, asio::io_context& io,
                Settings settings);
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Registers (New -> Starting -> Running), then calls OnRunning(); `done` with the
  // outcome. A second Start() answers at once: OK while starting or running, else
  // kClientShutdown.
  void Start(Done done);
  // Up to `attempts` register attempts, paused by the retry wait; also how a client the
  // master forgot (HB_NO_NODE) joins again. Stops, with kClientShutdown, once closing.
  void Register(int attempts, Done done);
  // (Re)starts the heartbeat schedule: a tick every `interval`, the first after
  // `first_delay`. Ignored once closing, so a closed client never heartbeats again.
  void ScheduleHeartbeats(std::chrono::milliseconds interval,
                          std::chrono::milliseconds first_delay);
  // The next tick at once (an acknowledgement the master waits for).
  void HeartbeatNow() { heartbeat_timer_->FireNow(); }
  // Stops the schedules, leaves (if registered) and ends the life; `done` with the
  // master's answer. A second Close() answers OK at once.
  void Close(Done done);

  // With the client's mutex held:
  bool running() const { return life_.running(); }
  bool closing() const { return life_.closing(); }

 private:
  void AfterAttempt(const Status& result, int attempts_left, Done done);
  bool Closing() const;  // takes the guard

  SessionClient& client_;
  std::mutex& guard_;
  asio::io_context& io_;
  const Settings settings_;
  ClientLife life_;  // guarded by guard_
  std::shared_ptr<PeriodicTimer> heartbeat_timer_;
};

}  // namespace tubemq::service
