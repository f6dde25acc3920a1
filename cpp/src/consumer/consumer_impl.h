// The consumer's pull engine (behaviour.md §3-§6): partitions held at brokers and their
// broker heartbeats, the fetch and confirm path, close; and its membership of the group
// at the master, one of two kinds chosen at construction (membership.h): balanced by
// the master (server_balanced.h) or by the application (assigned_membership.h).
//
// State is guarded by mutex_, never held while calling out.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codec/rpc_envelope.h"
#include "consumer/membership.h"
#include "consumer/rmt_data_cache_csm.h"
#include "consumer/store_watch.h"
#include "flowctrl/flow_ctrl_rule_handler.h"
#include "flowctrl/partition_pacer.h"
#include "net/connection_tracker.h"
#include "service/client_session.h"
#include "service/credentials.h"
#include "service/master_session.h"
#include "service/periodic_timer.h"
#include "service/tubemq_service.h"
#include "tubemq/consumer.h"

namespace tubemq {

namespace pb {
class AuthorizedInfo;
class CommitOffsetRequestC2B;
class RegisterRequestC2B;
}  // namespace pb

class AssignedMembership;

class Consumer::Impl : public std::enable_shared_from_this<Impl>,
                       public service::SessionClient {
 public:
  using Done = std::function<void(const Status&)>;

  Impl(ClientConfig config, ConsumerOptions options, std::vector<meta::Endpoint> masters,
       std::shared_ptr<net::TlsContext> tls, std::shared_ptr<service::IoEngine> engine);

  void Start(Done done) { session_.Start(std::move(done)); }
  // (Re)starts the heartbeat schedule; `eager`: quick heartbeats until the first
  // rebalance event (see the definition).
  void StartHeartbeats(bool eager);
  Status Poll(std::chrono::milliseconds wait, ReceivedBatch& batch);
  Status Confirm(const std::string& confirm_context, bool consumed, CommitRoute route);
  // How long a confirmed partition rests before its next fetch (§6.5): the pacing its
  // last fetch called for, less the time the application spent on the batch.
  std::chrono::microseconds PacingDelayAfterConfirm(const std::string& key,
                                                    const std::string& topic);
  void Close(Done done) { session_.Close(std::move(done)); }
  // Assigned partitions only (assigned_membership.h); otherwise kInvalidArgument.
  Status QueryPartitions(bool refresh, std::vector<PartitionMeta>& out);
  Status Assign(const std::string& partition_key, int64_t offset);
  Status Unassign(const std::string& partition_key, bool commit);

  consumer::RmtDataCacheCsm& cache() { return cache_; }
  std::map<std::string, std::pair<int64_t, int64_t>> Offsets() const;
  std::vector<std::string> HeldPartitions() const;
  std::optional<bool> BoundOffsetsApplied() const;
  const std::string& client_id() const { return client_id_; }
  Counters counters() const;

 private:
  friend class ServerBalancedMembership;
  friend class AssignedMembership;

  struct Booked {  // what the last fetch of a partition said, for its release delay
    flowctrl::FetchOutcome outcome;
    std::chrono::steady_clock::time_point replied;
  };

  // --- life at the master, whichever the membership (consumer_impl.cc) ---
  static bool FatalRegisterCode(int32_t code);
  static int64_t NowMs();
  // The session's steps (service::SessionClient); registering and heartbeats go
  // through the membership.
  void RegisterOnce(Done done) override;
  bool RetryMayCure(const Status& failure) const override;  // not a FatalRegisterCode
  void OnRunning() override;  // heartbeats and the confirm-timeout sweep
  void HeartbeatTick() override;
  void StopSchedules() override;
  void Leave(Done done) override;
  void LeaveUnregistered() override;
  std::shared_ptr<service::SessionClient> Self() override { return shared_from_this(); }
  // The master answered a heartbeat with "unknown member": join again, listing what is
  // held, and keep consuming meanwhile.
  void RegisterAgain();
  // A server-balanced member's first rebalance event arrived: heartbeats slow down to
  // the configured period.
  void EndEagerHeartbeats();
  // Topic -> "topic#item,item" filter condition ("" for an unfiltered topic).
  std::vector<std::pair<std::string, std::string>> TopicConditions() const;
  void ApplyFlowControl(int64_t def_id,
                        const std::string& def_json, int64_t group_id,
                        const std::string& group_json, int32_t qry_priority);
  // --- partitions at brokers (broker_registration.cc) ---
  // `boot_offset` >= 0 makes the broker start the partition there (clamped).
  void RegisterAtBroker(const meta::Partition& partition, bool retry_occupied,
                        int64_t boot_offset, Done done);
  void UnregisterAtBroker(const meta::Partition& partition, bool consumed, Done done);
  // The fields a register and an unregister of a partition share.
  pb::RegisterRequestC2B BrokerRegistration(const meta::Partition& partition,
                                            int32_t op_type) const;
  void BrokerHeartbeats();
  // --- pull path (fetch_path.cc) ---
  using FetchResult = consumer::RmtDataCacheCsm::FetchResult;
  void StartFetch(const consumer::RmtDataCacheCsm::Selection& selection);
  // After a fetch that brought nothing for the application (its batch settled): rests
  // the partition in use and fetches it again from the I/O thread when the rest is
  // short, else gives it back to the pollers with the rest.
  void RestAfterNothing(const std::string& key, uint64_t token, std::chrono::microseconds rest);
  // On the I/O thread: fetches the partition (resting in use in the cache) again once
  // `rest` is over (FetchAgain).
  void RefetchAfterRest(const std::string& key, uint64_t token,
                        std::chrono::microseconds rest);
  // Ends a rest in use: the partition's next fetch, unless the cache says otherwise.
  void FetchAgain(const std::string& key, uint64_t token);
  // A reply for `key` showed its store's index reaching `max_offset`: its siblings
  // resting since before that fetch now (StoreWatch).
  // Returns whether the store is written to steadily (StoreWatch::Reached's `busy`).
  bool WakeSiblings(const std::string& key, const std::optional<int64_t>& max_offset);
  void OnFetchReply(const consumer::RmtDataCacheCsm::Selection& selection, bool escaped,
                    const Status& transport, codec::RpcReply&& reply);
  // Settles a batch no message of which reaches the application, from the I/O thread.
  void CommitUnseen(const meta::Partition& partition, uint64_t token);
  // Commits the batch of a partition in use with a CommitOffset of its own, not waited
  // for; stores the answer's offsets, then releases the partition to rest `delay`.
  // `already_counted`: the commit rode on the fetch before and was counted then.
  void CommitHeld(const meta::Partition& partition, uint64_t token,
                  std::chrono::microseconds delay, bool already_counted);
  // A commit left to ride on the partition's next fetch; taken (true once) when a fetch
  // reply came back, which then carried it.
  void RideCommit(const std::string& key);
  bool TakeRiddenCommit(const std::string& key);
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
        rebalance_events{0}, fetches{0}, fetch_errors{0}, rests_cut_short{0}, batches{0},
        messages{0}, bytes{0}, commits{0}, commit_failures{0};
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
  std::shared_ptr<service::PeriodicTimer> sweep_timer_;
  consumer::RmtDataCacheCsm cache_;
  consumer::StoreWatch store_watch_;  // short rests that a sibling's reply may end
  flowctrl::FlowCtrlRuleHandler flow_rules_;

  mutable std::mutex mutex_;
  service::ClientSession session_;  // register, heartbeats, close; its state under mutex_
  bool heartbeat_in_flight_ = false;
  int eager_heartbeats_left_ = 0;  // quick heartbeats still to send before the first event
  static constexpr std::chrono::milliseconds kEagerHeartbeatInterval{500};
  static constexpr int kEagerHeartbeats = 40;  // 20 s at most
  bool report_next_ = true;  // the held set changed: the next heartbeat reports it
  int64_t visit_token_ = -2;
  std::map<std::string, Booked> booked_;
  std::map<std::string, flowctrl::PartitionPacer> pacers_;
  std::map<std::string, int> transport_failures_;  // consecutive, per partition
  std::set<std::string> ridden_commits_;  // partitions whose next fetch carries a commit
  AtomicCounters counters_;

  // Made last: a membership works on everything above.
  std::unique_ptr<Membership> membership_;
  AssignedMembership* assigned_ = nullptr;  // membership_, in that mode
};

}  // namespace tubemq
