// The server-balanced consumer's machinery (behaviour.md §3): the group membership at
// the master (register, heartbeats carrying subscription reports and rebalance event
// results), partition registration at brokers, broker heartbeats, and the pull path.
//
// Rebalance events are processed one at a time, in arrival order. An event's result
// stays queued until a heartbeat that carried it succeeded (§3.5.2). State is guarded
// by mutex_, never held while calling out.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codec/rpc_envelope.h"
#include "consumer/rmt_data_cache_csm.h"
#include "flowctrl/flow_ctrl_rule_handler.h"
#include "flowctrl/partition_pacer.h"
#include "meta/subscribe_info.h"
#include "net/connection_tracker.h"
#include "service/credentials.h"
#include "service/client_life.h"
#include "service/master_session.h"
#include "service/periodic_timer.h"
#include "service/tubemq_service.h"
#include "tubemq/consumer.h"

namespace tubemq {

namespace pb {
class AuthorizedInfo;
class ClientSubRepInfo;
class EventProto;
class CommitOffsetRequestC2B;
class HeartResponseM2C;
class OpsTaskInfo;
}  // namespace pb

class Consumer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  using Done = std::function<void(const Status&)>;

  Impl(ClientConfig config, ConsumerOptions options, std::vector<net::Endpoint> masters,
       std::shared_ptr<net::TlsContext> tls, std::shared_ptr<service::IoEngine> engine);

  void Start(Done done);
  // (Re)starts the heartbeat schedule; `eager`: quick heartbeats until the first
  // rebalance event (see the definition).
  void StartHeartbeats(bool eager);
  Status Poll(std::chrono::milliseconds wait, ReceivedBatch& batch);
  Status Confirm(const std::string& confirm_context, bool consumed, CommitRoute route);
  // How long a confirmed partition rests before its next fetch (§6.5): the pacing its
  // last fetch called for, less the time the application spent on the batch.
  std::chrono::milliseconds PacingDelayAfterConfirm(const std::string& key,
                                                    const std::string& topic);
  void Close(Done done);
  // --- client-balanced mode (client_balance.cc) ---
  Status QueryPartitions(bool refresh, std::vector<PartitionStatus>& out);
  Status Assign(const std::string& partition_key, int64_t offset);
  Status Unassign(const std::string& partition_key, bool commit);

  consumer::RmtDataCacheCsm& cache() { return cache_; }
  std::map<std::string, std::pair<int64_t, int64_t>> Offsets() const;
  std::vector<std::string> HeldPartitions() const;
  std::optional<bool> BoundOffsetsApplied() const;
  const std::string& client_id() const { return client_id_; }
  Counters counters() const;

 private:
  struct Event {
    int64_t rebalance_id = 0;
    int32_t op_type = 0;
    std::vector<std::string> subscribe_info;
    bool apply_bound_offsets = false;  // bound consume: this CONNECT starts the session
  };
  struct Booked {  // what the last fetch of a partition said, for its release delay
    flowctrl::FetchOutcome outcome;
    std::chrono::steady_clock::time_point replied;
  };

  // --- master (consumer_impl.cc) ---
  static bool FatalRegisterCode(int32_t code);
  static int64_t NowMs();
  void Register(int attempts_left, Done done);
  // Retries a failed registration unless the refusal is final or attempts ran out.
  void AfterRegisterAttempt(const Status& result, int attempts_left, Done done);
  bool Closing() const;  // close() was called
  // Topic -> "topic#item,item" filter condition ("" for an unfiltered topic).
  std::vector<std::pair<std::string, std::string>> TopicConditions() const;
  void Heartbeat();
  void OnHeartbeatReply(const Status& status, pb::HeartResponseM2C& response, bool sent_result);
  void ApplyFlowControl(int64_t def_id,
                        const std::string& def_json, int64_t group_id,
                        const std::string& group_json, int32_t qry_priority);
  std::vector<std::string> HeldSubscribeInfo() const;
  // --- client-balanced membership (client_balance.cc) ---
  void RegisterV2(int attempts_left, Done done);
  void HeartbeatV2();
  void FillSubscriptionReport(pb::ClientSubRepInfo& report, bool with_partitions);
  void FillOpsTaskInfo(pb::OpsTaskInfo& info) const;
  // Applies what a V2 reply carries; false if the broker list was unusable.
  void ApplyOpsTaskInfo(const pb::OpsTaskInfo& info);
  void ApplyBrokers(int64_t config_id, const std::vector<std::string>& list);
  void ApplyTopicMeta(int64_t meta_id, const std::vector<std::string>& list);
  void DropUnsubscribable();
  void ConsumeFromMax();
  // --- rebalance (rebalance.cc) ---
  void QueueEvent(Event event);
  void ProcessNextEvent();
  void Connect(const Event& event, Done done);
  void Disconnect(const Event& event, Done done);
  // `boot_offset` >= 0 makes the broker start the partition there (clamped).
  void RegisterAtBroker(const meta::Partition& partition, bool retry_occupied,
                        int64_t boot_offset, Done done);
  void UnregisterAtBroker(const meta::Partition& partition, bool consumed, Done done);
  void BrokerHeartbeats();
  // --- pull path (fetch_path.cc) ---
  using FetchResult = consumer::RmtDataCacheCsm::FetchResult;
  void StartFetch(const consumer::RmtDataCacheCsm::Selection& selection);
  void OnFetchReply(const consumer::RmtDataCacheCsm::Selection& selection, bool escaped,
                    const Status& transport, codec::RpcReply&& reply);
  // Settles a batch no message of which reaches the application, from the I/O thread.
  void CommitUnseen(const meta::Partition& partition, uint64_t token);
  // The CommitOffset request of a partition's outstanding batch.
  pb::CommitOffsetRequestC2B CommitRequest(const meta::Partition& partition, bool consumed) const;
  // --- common ---
  std::shared_ptr<net::ClientConnection> BrokerConnection(const meta::Partition& partition);
  std::chrono::milliseconds rpc_timeout() const {
    return std::chrono::milliseconds(config_.rpc_timeout_ms);
  }
  void SignIfNeeded(pb::MasterCertificateInfo& certificate) const {
    if (credentials_.enabled()) credentials_.Sign(certificate);
  }
  // What every broker request that the broker authenticates (register, unregister,
  // heartbeat) carries: the master's visit token and, with credentials, the signature
  // string - a broker with authentication on answers 415 to one without it.
  void FillBrokerAuth(pb::AuthorizedInfo& auth) const;
  bool Running() const;

  // Counted from I/O threads and application threads alike, so each is atomic.
  struct AtomicCounters {
    std::atomic<uint64_t> registrations{0}, heartbeats_ok{0}, heartbeats_failed{0},
        rebalance_events{0}, fetches{0}, fetch_errors{0}, batches{0}, messages{0}, bytes{0},
        commits{0}, commit_failures{0};
  };
  static void Count(std::atomic<uint64_t>& counter, uint64_t by = 1) {
    counter.fetch_add(by, std::memory_order_relaxed);
  }

  const ClientConfig config_;
  const ConsumerOptions options_;
  const service::Credentials credentials_;
  const std::string local_host_;
  const std::string client_id_;
  const int64_t session_time_ms_;
  std::shared_ptr<service::IoEngine> engine_;
  const std::shared_ptr<net::TlsContext> tls_;  // null: plain TCP
  std::shared_ptr<service::MasterSession> master_;
  net::ConnectionTracker broker_connections_;
  std::shared_ptr<service::PeriodicTimer> heartbeat_timer_;
  std::shared_ptr<service::PeriodicTimer> sweep_timer_;
  consumer::RmtDataCacheCsm cache_;
  flowctrl::FlowCtrlRuleHandler flow_rules_;

  mutable std::mutex mutex_;
  service::ClientLife life_;
  bool heartbeat_in_flight_ = false;
  // Bound consume: the master has not made the group's first allocation yet, and the
  // member's offsets have not been applied to a CONNECT yet.
  bool not_allocated_ = true;
  bool bound_offsets_applied_ = false;
  // Whether the member's first CONNECT decided on its bound offsets yet, and so whether
  // bound_offsets_applied_ is the final answer (a member that joins a session the master
  // had allocated already resumes at the group's commits instead).
  bool bound_offsets_decided_ = false;
  int eager_heartbeats_left_ = 0;  // quick heartbeats still to send before the first event
  static constexpr std::chrono::milliseconds kEagerHeartbeatInterval{500};
  static constexpr int kEagerHeartbeats = 40;  // 20 s at most
  bool report_next_ = true;
  std::deque<Event> events_;      // received, not yet processed
  bool event_busy_ = false;
  std::deque<Event> results_;     // processed, not yet acknowledged by a heartbeat
  int64_t visit_token_ = -2;
  std::map<std::string, Booked> booked_;
  std::map<std::string, flowctrl::PartitionPacer> pacers_;
  std::map<std::string, int> transport_failures_;  // consecutive, per partition
  AtomicCounters counters_;

  // Client-balanced mode: the master's metadata and what the application asked for.
  meta::BrokerMap brokers_;
  int64_t broker_config_id_ = -2;
  int64_t topic_meta_id_ = -2;
  int64_t topic_meta_time_ms_ = -1;  // when topic metadata was last stored
  std::vector<meta::PartitionMeta> topic_meta_;
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
