// The producer (behaviour.md §2): its session at the master (service::ClientSession:
// register, heartbeats that learn the writable partitions of the published topics,
// unregister on close) and its send path.
//
// State is guarded by one mutex that is never held while calling out (into the
// network layer, or into a completion). Completions run on I/O threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "meta/broker_info.h"
#include "meta/partition.h"
#include "meta/endpoint.h"
#include "producer/broker_shield.h"
#include "producer/partition_router.h"
#include "net/connection_tracker.h"
#include "service/client_session.h"
#include "service/credentials.h"
#include "service/master_session.h"
#include "service/periodic_timer.h"
#include "service/tubemq_service.h"
#include "tubemq/client_config.h"
#include "tubemq/producer.h"

namespace tubemq {

namespace pb {
class MasterCertificateInfo;
class MasterAuthorizedInfo;
class ApprovedClientConfig;
}  // namespace pb

class Producer::Impl : public std::enable_shared_from_this<Impl>,
                       public service::SessionClient {
 public:
  using Done = std::function<void(const Status&)>;
  using SendCallback = Producer::SendCallback;

  Impl(ClientConfig config, ProducerOptions options, std::vector<meta::Endpoint> masters,
       std::shared_ptr<net::TlsContext> tls, std::shared_ptr<service::IoEngine> engine);

  void Start(Done done) { session_.Start(std::move(done)); }
  void Publish(std::vector<std::string> topics, Done done);
  void Close(Done done) { session_.Close(std::move(done)); }

  bool AcquireSendSlot(std::chrono::milliseconds wait);
  void Send(OutgoingMessage message, SendCallback callback);
  int32_t InFlight() const;

  std::vector<PartitionInfo> Partitions(const std::string& topic) const;
  std::vector<std::string> PublishedTopics() const;
  Counters counters() const;
  const std::string& client_id() const { return client_id_; }

 private:

  // --- the session's steps (service::SessionClient) ---
  void RegisterOnce(Done done) override;
  bool RetryMayCure(const Status& failure) const override;
  void OnRunning() override;  // heartbeats and the probe of shielded brokers
  void HeartbeatTick() override { Heartbeat(nullptr); }
  void StopSchedules() override;
  void Leave(Done done) override;  // once the sends in flight are answered
  void OnClosed() override;        // heartbeat waiters learn the producer closed
  std::shared_ptr<service::SessionClient> Self() override { return shared_from_this(); }

  Status OnRegisterReply(const Status& status, codec::RpcReply&& reply);
  // Queues `done` for the result of the next heartbeat that starts from now on.
  void Heartbeat(Done done);
  void SendHeartbeat();
  void OnHeartbeatReply(const Status& status, codec::RpcReply&& reply);
  void FinishHeartbeat(const Status& status);
  // --- send path (send_path.cc) ---
  struct SendJob;
  struct SendTarget;
  // The checks that need no producer state (no lock); also encodes the message data.
  Status CheckLocally(SendJob& job, OutgoingMessage& message);
  // Called with mutex_ held: the first attempt's checks against the producer's state.
  Status CheckAgainstState(const SendJob& job, const Status& local) const;
  // `first_check`: the local checks' verdict on a first attempt; null on a retry.
  void Attempt(std::shared_ptr<SendJob> job, const Status* first_check);
  // Called with mutex_ held, on a first attempt whose only fault is an unpublished topic:
  // parks the send until the topic is published (publish on first send); returns whether
  // this send is the first parked for its topic, so the caller starts the publish.
  bool ParkUntilPublished(std::shared_ptr<SendJob> job);
  // The publish a first send started has ended: its parked sends go on, or fail with it.
  void OnPublishedOnSend(const std::string& topic, const Status& status);
  void OnSendReply(std::shared_ptr<SendJob> job, const SendTarget& target, const Status& status,
                   codec::RpcReply&& reply);
  void Retry(std::shared_ptr<SendJob> job, const Status& why);
  // `counted`: the caller already counted the outcome in counters_.
  void FinishSend(const std::shared_ptr<SendJob>& job, const Status& status, SendResult&& result,
                  bool counted = false);
  // Called with mutex_ held, whenever topics_ changes: rebuilds targets_.
  void RebuildTargets();
  // A finished send leaves the window in two steps: FreeSendSlot() before its callback,
  // SendFinished() after it. A close waits for both (WhenDrained).
  void FreeSendSlot();
  void SendFinished();
  // Runs `then` once no send is in flight or running its callback, or when `deadline`
  // passes.
  void WhenDrained(std::chrono::milliseconds deadline, std::function<void()> then);
  void SignIfNeeded(pb::MasterCertificateInfo& certificate) const;
  // Tokens and settings the master hands out; called with mutex_ held.
  void ApplyGrants(const pb::MasterAuthorizedInfo* authorized,
                   const pb::ApprovedClientConfig* approved);

  // Called with mutex_ held, before `fresh` replaces topics_.
  void CarryOverMissingTopics(std::map<std::string, meta::TopicPartitions>& fresh);
  void ApplyBrokerList(int64_t checksum, const std::vector<std::string>& items);
  Status CheckPublishable(const std::vector<std::string>& topics) const;
  void ProbeShieldedBrokers();
  void AwaitPublishable(std::vector<std::string> topics, int attempts_left, Done done);
  std::chrono::milliseconds rpc_timeout() const {
    return std::chrono::milliseconds(config_.rpc_timeout_ms);
  }

  const ClientConfig config_;
  const ProducerOptions options_;
  const service::Credentials credentials_;
  const std::string local_host_;
  const int32_t sent_addr_;  // local_host_ as protocol.md §5.11 wants it
  const std::string client_id_;
  std::shared_ptr<service::IoEngine> engine_;
  const std::shared_ptr<net::TlsContext> tls_;  // null: plain TCP
  std::shared_ptr<service::MasterSession> master_;
  net::ConnectionTracker broker_connections_;
  std::shared_ptr<service::PeriodicTimer> probe_timer_;  // shielded brokers, every second

  mutable std::mutex mutex_;
  service::ClientSession session_;  // register, heartbeats, close; its state under mutex_
  int64_t broker_checksum_ = -1;  // -1: no broker list applied yet
  meta::BrokerMap brokers_;
  std::map<std::string, meta::TopicPartitions> topics_;
  // Per topic, index for index with topics_[topic].partitions: what a send to each
  // partition reports, its strings built once per topic map instead of per reply.
  struct TopicTargets {
    std::vector<std::shared_ptr<const SendTarget>> targets;
    std::vector<std::string> keys;  // targets[i]->key, for the router
  };
  std::map<std::string, TopicTargets> targets_;
  // The connection last used per broker id, so that a send finds it without the pool's
  // lock and without building the pool's string key; replaced when closed.
  std::map<int32_t, std::shared_ptr<net::ClientConnection>> broker_links_;
  // Published topics the last heartbeats did not report, and since when.
  std::map<std::string, std::chrono::steady_clock::time_point> topic_missing_since_;
  std::set<std::string> published_;
  // Sends to a topic whose publish a first send started, waiting for its outcome.
  std::map<std::string, std::vector<std::shared_ptr<SendJob>>> awaiting_publish_;
  int64_t config_id_ = -2;  // ApprovedClientConfig version; -2 = none yet
  int64_t max_message_size_ = meta::kDefaultMaxMessageSize;
  int64_t visit_token_ = -2;
  std::string auth_token_;  // authAuthorizedToken from the master, if it issues one
  producer::PartitionRouter router_;
  producer::BrokerShield shield_;
  int32_t in_flight_ = 0;
  int32_t finishing_ = 0;      // sends out of the window whose callback still runs
  int32_t slot_waiters_ = 0;  // threads inside AcquireSendSlot()
  // How many places must be free before a waiting sender is woken: 1 for small windows
  // (as before), up to 256 for large ones.
  int32_t SlotWakeBatch() const { return std::clamp(options_.max_in_flight / 16, 1, 256); }
  std::condition_variable slot_freed_;
  std::function<void()> on_drained_;
  bool heartbeat_in_flight_ = false;
  std::vector<Done> next_heartbeat_waiters_;
  std::vector<Done> current_heartbeat_waiters_;
  Counters counters_;
};

}  // namespace tubemq
