// MasterSession: the client's way to the active master of a master group. Each call
// goes to the last master that answered; on a connection failure, a timeout, or an
// answer saying "not the active master" (StandbyException) or "not available"
// (ServerNotReady/ServiceStopping), it moves on to the next address, trying each
// configured master at most once per call (behaviour.md §1.1).
#pragma once

#include <google/protobuf/message_lite.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "net/connection_tracker.h"
#include "meta/endpoint.h"
#include "service/rpc_call.h"
#include "service/tubemq_service.h"

namespace tubemq::service {

class MasterSession : public std::enable_shared_from_this<MasterSession> {
 public:
  // `on_reply` learns which master answered: a client that lands on a different
  // master than before must expect to be unknown there (HB_NO_NODE) and re-register.
  using Callback =
      std::function<void(const Status& status, codec::RpcReply&& reply, size_t master_index)>;

  // Create with std::make_shared: calls in flight keep the session alive.
  MasterSession(std::shared_ptr<IoEngine> engine, std::vector<meta::Endpoint> masters,
                std::shared_ptr<net::TlsContext> tls = nullptr);

  void Call(codec::Method method, const google::protobuf::MessageLite& request,
            std::chrono::milliseconds timeout, Callback callback);

  const std::vector<meta::Endpoint>& masters() const { return masters_; }
  size_t current_index() const { return current_.load(); }
  // Connections to a master re-opened after the previous one was lost.
  uint64_t reconnects() const { return connections_.reconnects(); }
  // Calls answered by a different master than the call before (a failover seen).
  uint64_t switches() const { return switches_.load(); }
  // Answers "not the active master" (StandbyException) met on the way to the active one.
  uint64_t standby_answers() const { return standby_answers_.load(); }

 private:
  struct Attempt;
  void Try(std::shared_ptr<Attempt> attempt);

  std::shared_ptr<IoEngine> engine_;
  net::ConnectionTracker connections_;
  const std::vector<meta::Endpoint> masters_;
  std::atomic<size_t> current_{0};
  std::atomic<bool> answered_{false};  // whether any call has been answered yet
  std::atomic<uint64_t> switches_{0};
  std::atomic<uint64_t> standby_answers_{0};
};

}  // namespace tubemq::service
