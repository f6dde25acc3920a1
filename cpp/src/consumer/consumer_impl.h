// The server-balanced consumer's machinery (behaviour.md §3): the group membership at
// the master (register, heartbeats carrying subscription reports and rebalance event
// results), partition registration at brokers, broker heartbeats, and the pull path.
//
// Rebalance events are processed one at a time, in arrival order. An event's result
// stays queued until a heartbeat that carried it succeeded (§3.5.2). State is guarded
// by mutex_, never held while calling out.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "consumer/rmt_data_cache_csm.h"
#include "flowctrl/flow_ctrl_rule_handler.h"
#include "flowctrl/partition_pacer.h"
#include "meta/subscribe_info.h"
#include "service/credentials.h"
#include "service/master_session.h"
#include "service/periodic_timer.h"
#include "service/tubemq_service.h"
#include "tubemq/consumer.h"

namespace tubemq {

namespace pb {
class EventProto;
class HeartResponseM2C;
}  // namespace pb

class Consumer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  using Done = std::function<void(const Status&)>;

  Impl(ClientConfig config, ConsumerOptions options, std::vector<net::Endpoint> masters,
       std::shared_ptr<service::IoEngine> engine);

  void Start(Done done);
  Status Poll(std::chrono::milliseconds wait, ReceivedBatch& batch);
  Status Confirm(const std::string& confirm_context, bool consumed);
  void Close(Done done);

  consumer::RmtDataCacheCsm& cache() { return cache_; }
  std::map<std::string, std::pair<int64_t, int64_t>> Offsets() const;
  std::vector<std::string> HeldPartitions() const;
  const std::string& client_id() const { return client_id_; }

 private:
  enum class State { kNew, kStarting, kRunning, kClosing, kClosed };
  struct Event {
    int64_t rebalance_id = 0;
    int32_t op_type = 0;
    std::vector<std::string> subscribe_info;
  };
  struct Booked {  // what the last fetch of a partition said, for its release delay
    flowctrl::FetchOutcome outcome;
    std::chrono::steady_clock::time_point replied;
  };

  // --- master (consumer_impl.cc) ---
  void Register(int attempts_left, Done done);
  void Heartbeat();
  void OnHeartbeatReply(const Status& status, pb::HeartResponseM2C& response, bool sent_result);
  void ApplyFlowControl(int64_t def_id,
                        const std::string& def_json, int64_t group_id,
                        const std::string& group_json, int32_t qry_priority);
  std::vector<std::string> HeldSubscribeInfo() const;
  // --- rebalance (rebalance.cc) ---
  void QueueEvent(Event event);
  void ProcessNextEvent();
  void Connect(const Event& event, Done done);
  void Disconnect(const Event& event, Done done);
  void RegisterAtBroker(const meta::Partition& partition, bool retry_occupied, Done done);
  void UnregisterAtBroker(const meta::Partition& partition, bool consumed, Done done);
  void BrokerHeartbeats();
  // --- common ---
  std::shared_ptr<net::ClientConnection> BrokerConnection(const meta::Partition& partition);
  std::chrono::milliseconds rpc_timeout() const {
    return std::chrono::milliseconds(config_.rpc_timeout_ms);
  }
  void SignIfNeeded(pb::MasterCertificateInfo& certificate) const {
    if (credentials_.enabled()) credentials_.Sign(certificate);
  }
  bool Running() const;

  const ClientConfig config_;
  const ConsumerOptions options_;
  const service::Credentials credentials_;
  const std::string local_host_;
  const std::string client_id_;
  const int64_t session_time_ms_;
  std::shared_ptr<service::IoEngine> engine_;
  std::shared_ptr<service::MasterSession> master_;
  std::shared_ptr<service::PeriodicTimer> heartbeat_timer_;
  std::shared_ptr<service::PeriodicTimer> sweep_timer_;
  consumer::RmtDataCacheCsm cache_;
  flowctrl::FlowCtrlRuleHandler flow_rules_;

  mutable std::mutex mutex_;
  State state_ = State::kNew;
  bool heartbeat_in_flight_ = false;
  bool report_next_ = true;
  std::deque<Event> events_;      // received, not yet processed
  bool event_busy_ = false;
  std::deque<Event> results_;     // processed, not yet acknowledged by a heartbeat
  int64_t visit_token_ = -2;
  std::map<std::string, Booked> booked_;
  std::map<std::string, flowctrl::PartitionPacer> pacers_;
  std::map<std::string, int> transport_failures_;  // consecutive, per partition
};

}  // namespace tubemq
