// The assigned membership (Python's AssignedConsumer; TubeMQ's "client-balanced"
// consumer, behaviour.md §5): the application, not the master,
// chooses the partitions (Assign/Unassign) and their start offsets. It joins with the
// master's "V2" register and heartbeat (no rebalance events), which carry the broker
// list and the topics' partition metadata; the held set is reported on change.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "consumer/membership.h"
#include "meta/broker_info.h"
#include "meta/partition.h"
#include "tubemq/consumer.h"

namespace tubemq {

namespace pb {
class ClientSubRepInfo;
class OpsTaskInfo;
}  // namespace pb

class AssignedMembership : public Membership {
 public:
  explicit AssignedMembership(Consumer::Impl& consumer) : consumer_(consumer) {}

  void RegisterOnce(Done done) override;
  void Heartbeat() override;
  bool HeartbeatsEagerly() const override { return false; }
  void OnTick() override { ConsumeFromMax(); }

  // The application's calls; each blocks for at most a few RPC timeouts.
  Status QueryPartitions(bool refresh, std::vector<PartitionMeta>& out);
  Status Assign(const std::string& partition_key, int64_t offset);
  Status Unassign(const std::string& partition_key, bool commit);

 private:
  void FillSubscriptionReport(pb::ClientSubRepInfo& report, bool with_partitions);
  void FillOpsTaskInfo(pb::OpsTaskInfo& info) const;
  void ApplyOpsTaskInfo(const pb::OpsTaskInfo& info);
  void ApplyBrokers(int64_t config_id, const std::vector<std::string>& list);
  void ApplyTopicMeta(int64_t meta_id, const std::vector<std::string>& list);
  void DropUnsubscribable();
  void ConsumeFromMax();

  Consumer::Impl& consumer_;
  // Guarded by the consumer's mutex: the master's metadata and what the application
  // asked for.
  meta::BrokerMap brokers_;
  int64_t broker_config_id_ = -2;
  int64_t topic_meta_id_ = -2;
  int64_t topic_meta_time_ms_ = -1;  // when topic metadata was last stored
  std::vector<meta::SubscribablePartition> topic_meta_;
  std::chrono::steady_clock::time_point topic_meta_queried_{};
  bool topic_meta_known_ = false;
  std::vector<std::string> last_report_;  // held set last reported to the master
  int heartbeats_since_report_ = 0;
  int64_t from_max_ctrl_id_ = -2;  // the admin's last "consume from max" stamp
  bool from_max_pending_ = false;
  // Partition key -> when the broker last refused it as occupied (or auth): a retry
  // within 5 s is refused locally with 421 (behaviour.md §5.5).
  std::map<std::string, std::chrono::steady_clock::time_point> refused_at_;
};

}  // namespace tubemq
