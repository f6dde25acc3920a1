// The server-balanced membership (behaviour.md §3): the master balances the group and
// tells each member, in heartbeat replies, which partitions to take and give back
// (rebalance events). Events are processed one at a time, in arrival order; an event's
// result stays queued until a heartbeat that carried it succeeded (§3.5.2). Bound
// consume (§3.10) starts a session's partitions at the offsets its members name.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "consumer/membership.h"
#include "tubemq/consumer.h"

namespace tubemq {

namespace pb {
class HeartResponseM2C;
}  // namespace pb

class ServerBalancedMembership : public Membership {
 public:
  explicit ServerBalancedMembership(Consumer::Impl& consumer) : consumer_(consumer) {}

  void RegisterOnce(Done done) override;
  void Heartbeat() override;
  bool HeartbeatsEagerly() const override { return true; }
  std::optional<bool> BoundOffsetsApplied() const override;

 private:
  struct Event {
    int64_t rebalance_id = 0;
    int32_t op_type = 0;
    std::vector<std::string> subscribe_info;
    bool apply_bound_offsets = false;  // bound consume: this CONNECT starts the session
  };

  std::vector<std::string> HeldSubscribeInfo() const;
  void OnHeartbeatReply(const Status& status, pb::HeartResponseM2C& response, bool sent_result);
  void QueueEvent(Event event);
  void ProcessNextEvent();
  void Connect(const Event& event, Done done);
  void Disconnect(const Event& event, Done done);

  Consumer::Impl& consumer_;
  // Guarded by the consumer's mutex:
  // Bound consume: the master has not made the group's first allocation yet, and the
  // member's offsets have not been applied to a CONNECT yet.
  bool not_allocated_ = true;
  bool bound_offsets_applied_ = false;
  // Whether the member's first CONNECT decided on its bound offsets yet, and so whether
  // bound_offsets_applied_ is the final answer (a member that joins a session the master
  // had allocated already resumes at the group's commits instead).
  bool bound_offsets_decided_ = false;
  std::deque<Event> events_;   // received, not yet processed
  bool event_busy_ = false;
  std::deque<Event> results_;  // processed, not yet acknowledged by a heartbeat
};

}  // namespace tubemq
