// How a consumer belongs to its group at the master: the one thing the two consumers do
// differently. The pull engine (Consumer::Impl: partitions held at brokers, fetches,
// confirms, close) is the same for both; the membership, chosen at construction, says
// which partitions it holds:
//
//   ServerBalancedMembership  the master balances the group and sends rebalance events
//                             (Python's Consumer; upstream: the push/pull consumer)
//   AssignedMembership        the application assigns partitions itself (Python's
//                             AssignedConsumer; TubeMQ's client-balanced consumer,
//                             upstream: the "V2" register/heartbeat)
//
// A membership lives inside its Consumer::Impl and works on its state under the
// consumer's mutex; its callbacks hold the Impl, and so the membership, alive.
#pragma once

#include <functional>
#include <optional>

#include "tubemq/status.h"

namespace tubemq {

class Membership {
 public:
  using Done = std::function<void(const Status&)>;

  virtual ~Membership() = default;

  // One attempt to join (or join again); `done` gets the master's verdict. Retries are
  // the engine's (Consumer::Impl::Register).
  virtual void RegisterOnce(Done done) = 0;
  // One heartbeat to the master, unless one is on its way already.
  virtual void Heartbeat() = 0;
  // Whether heartbeats go out quickly at first: the master assigns a server-balanced
  // member its partitions in a heartbeat reply.
  virtual bool HeartbeatsEagerly() const = 0;
  // What else a heartbeat tick does (an admin's "consume from max" order).
  virtual void OnTick() {}
  // Bound consume only: whether the member's bound offsets were applied (nullopt: not
  // decided yet, or not bound).
  virtual std::optional<bool> BoundOffsetsApplied() const { return std::nullopt; }
};

}  // namespace tubemq
