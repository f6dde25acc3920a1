// The life of a producer or consumer at the master (docs/design.md), one state machine
// for both:
//
//   New --Start--> Starting --registered--> Running
//                  Starting --refused--> New            (Start may be tried again)
//   any --Close--> Closing --left the master--> Closed  (a second Close is a no-op)
//
// Held by ClientSession (client_session.h) under its client's mutex, as the rest of the
// client's state changes with it; these calls are the only transitions.
#pragma once

#include <string>

#include "tubemq/status.h"

namespace tubemq::service {

class ClientLife {
 public:
  enum class State { kNew, kStarting, kRunning, kClosing, kClosed };

  // Start(): true if this call is the one to register (New -> Starting). Otherwise
  // `answer` is what Start() reports at once: OK while starting or running, else that
  // the `client` ("the producer", "the consumer") is closed.
  bool BeginStart(const char* client, Status& answer) {
    if (state_ == State::kNew) {
      state_ = State::kStarting;
      return true;
    }
    answer = state_ == State::kStarting || state_ == State::kRunning
                 ? Status::OK()
                 : Status(ErrorCode::kClientShutdown, std::string(client) + " is closed");
    return false;
  }
  // The registration's outcome: Running, or New again to allow another Start() - unless
  // Close() came meanwhile.
  void EndStart(bool registered) {
    if (state_ == State::kStarting) state_ = registered ? State::kRunning : State::kNew;
  }
  // Close(): false if closing already. Otherwise the client is Closing from now on, and
  // `registered` says whether it was running (so has a master session to leave).
  bool BeginClose(bool& registered) {
    if (closing()) return false;
    registered = state_ == State::kRunning;
    state_ = State::kClosing;
    return true;
  }
  void EndClose() { state_ = State::kClosed; }

  bool running() const { return state_ == State::kRunning; }
  // Starting or running: the schedules of a live session may go on.
  bool live() const { return state_ == State::kStarting || state_ == State::kRunning; }
  bool closing() const { return state_ == State::kClosing || state_ == State::kClosed; }

 private:
  State state_ = State::kNew;
};

}  // namespace tubemq::service
