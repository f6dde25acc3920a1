#include "producer/producer_impl.h"

#include <algorithm>

#include "MasterService.pb.h"
#include "log/log.h"
#include "meta/client_id.h"
#include "meta/text.h"
#include "meta/message_data.h"
#include "service/retry_pause.h"
#include "tubemq/version.h"

namespace tubemq {
namespace {

using codec::Method;

// How often brokers shielded for refusing connections are probed.
constexpr std::chrono::milliseconds kProbePeriod{1000};

void CallAll(std::vector<Producer::Impl::Done>& waiters, const Status& status) {
  for (auto& waiter : waiters) waiter(status);
  waiters.clear();
}

Status MasterError(const char* what, int32_t code, const std::string& message) {
  return Status(static_cast<ErrorCode>(code),
                std::string(what) + " refused by the master: " + message);
}

}  // namespace

Producer::Impl::Impl(ClientConfig config, ProducerOptions options,
                     std::vector<meta::Endpoint> masters, std::shared_ptr<net::TlsContext> tls,
                     std::shared_ptr<service::IoEngine> engine)
    : config_(std::move(config)),
      options_(options),
      credentials_(config_.auth_user, config_.auth_password),
      local_host_(config_.local_host.empty() ? meta::LocalIPv4() : config_.local_host),
      sent_addr_(meta::SentAddr(local_host_)),
      client_id_(meta::MakeClientId("", local_host_)),
      engine_(std::move(engine)),
      tls_(std::move(tls)),
      master_(std::make_shared<service::MasterSession>(engine_, std::move(masters), tls_)),
      broker_connections_(engine_->pool(), tls_),
      probe_timer_(
          service::PeriodicTimer::Create(engine_->io().get_executor(), "producer-probe")),
      session_(*this, mutex_, engine_->io(),
               {"producer", config_.register_attempts,
                std::chrono::milliseconds(config_.register_retry_wait_ms)}) {}

// --- register ----------------------------------------------------------------------

void Producer::Impl::OnRunning() {
  const auto period = std::chrono::milliseconds(config_.heartbeat_period_ms);
  session_.ScheduleHeartbeats(period, period);
  std::weak_ptr<Impl> weak = shared_from_this();
  probe_timer_->Start(kProbePeriod, kProbePeriod, [weak] {
    if (auto impl = weak.lock()) impl->ProbeShieldedBrokers();
  });
}

bool Producer::Impl::RetryMayCure(const Status& failure) const {
  return IsRetriable(failure.code_value());
}

void Producer::Impl::RegisterOnce(Done done) {
  pb::RegisterRequestP2M request;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request.set_clientid(client_id_);
    for (const auto& topic : published_) request.add_topiclist(topic);
    request.set_brokerchecksum(broker_checksum_);
    request.set_hostname(local_host_);
    request.set_jdkversion(std::string("tubemq-python/") + kVersion);
    request.mutable_appdconfig()->set_configid(config_id_);
  }
  if (credentials_.enabled()) SignIfNeeded(*request.mutable_authinfo());
  master_->Call(Method::kProducerRegister, request, rpc_timeout(),
                [self = shared_from_this(), done = std::move(done)](
                    const Status& status, codec::RpcReply&& reply, size_t) {
                  done(self->OnRegisterReply(status, std::move(reply)));
                });
}

Status Producer::Impl::OnRegisterReply(const Status& status, codec::RpcReply&& reply) {
  pb::RegisterResponseM2P response;
  Status result = status.ok() ? service::ParseReply(reply, response) : status;
  if (result.ok() && !response.success()) {
    result = MasterError("producer registration", response.errcode(), response.errmsg());
  }
  if (result.ok()) {
    ApplyBrokerList(response.brokerchecksum(),
                    {response.brokerinfos().begin(), response.brokerinfos().end()});
    std::lock_guard<std::mutex> lock(mutex_);
    ApplyGrants(response.has_authorizedinfo() ? &response.authorizedinfo() : nullptr,
                response.has_appdconfig() ? &response.appdconfig() : nullptr);
    ++counters_.registrations;
    TUBEMQ_LOG_INFO("producer " << client_id_ << " registered with "
                                << master_->masters()[master_->current_index()].ToString());
  }
  return result;
}

void Producer::Impl::ApplyBrokerList(int64_t checksum, const std::vector<std::string>& items) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The master sends the list only when our version differs; a register reply always
  // carries it. Replace, never merge (protocol.md §5.2).
  if (checksum == broker_checksum_ && !brokers_.empty()) return;
  Status first_error;
  brokers_ = meta::ParseBrokerList(items, /*tls=*/tls_ != nullptr, &first_error);
  broker_checksum_ = checksum;
  if (!first_error.ok()) TUBEMQ_LOG_WARN("ignoring a bad broker entry: " << first_error.message());
}

// --- shielded brokers ---------------------------------------------------------------

// A broker that refused connections is avoided for at least 10 s, longer each time it
// still refuses; one that comes back would wait out the rest of that period with no
// traffic. A connect attempt every second (no request, through the shared pool) tells
// sooner (behaviour.md §2.8, "ours").
void Producer::Impl::ProbeShieldedBrokers() {
  std::vector<meta::BrokerInfo> targets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!session_.running()) return;
    for (int32_t id : shield_.Probeable(std::chrono::steady_clock::now())) {
      const auto found = brokers_.find(id);
      if (found != brokers_.end()) targets.push_back(found->second);
    }
  }
  for (const auto& broker : targets) {
    std::weak_ptr<Impl> weak = shared_from_this();
    engine_->pool().Get(broker.endpoint, tls_)->Connect([weak, broker](const Status& status) {
      auto self = weak.lock();
      if (!self || !status.ok()) return;
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->shield_.OnSuccess(broker.id);
      TUBEMQ_LOG_INFO("broker " << broker.endpoint.ToString()
                                << " takes connections again; sends may go there");
    });
  }
}

// --- heartbeat ---------------------------------------------------------------------

void Producer::Impl::Heartbeat(Done done) {
  bool running = false;
  bool send = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running = session_.running();
    if (running) {
      if (done) next_heartbeat_waiters_.push_back(std::move(done));
      send = !heartbeat_in_flight_;
      heartbeat_in_flight_ = true;
    }
  }
  if (!running) {
    if (done) done(Status(ErrorCode::kClientShutdown, "the producer is not running"));
    return;
  }
  if (send) SendHeartbeat();
}

void Producer::Impl::SendHeartbeat() {
  pb::HeartRequestP2M request;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& waiter : next_heartbeat_waiters_) {
      current_heartbeat_waiters_.push_back(std::move(waiter));
    }
    next_heartbeat_waiters_.clear();
    request.set_clientid(client_id_);
    request.set_brokerchecksum(broker_checksum_);
    request.set_hostname(local_host_);
    for (const auto& topic : published_) request.add_topiclist(topic);
    request.mutable_appdconfig()->set_configid(config_id_);
  }
  if (credentials_.enabled()) SignIfNeeded(*request.mutable_authinfo());
  master_->Call(Method::kProducerHeartbeat, request, rpc_timeout(),
                [self = shared_from_this()](const Status& status, codec::RpcReply&& reply,
                                            size_t) {
                  self->OnHeartbeatReply(status, std::move(reply));
                });
}

void Producer::Impl::OnHeartbeatReply(const Status& status, codec::RpcReply&& reply) {
  pb::HeartResponseM2P response;
  Status result = status.ok() ? service::ParseReply(reply, response) : status;
  if (result.ok() && !response.success()) {
    if (response.errcode() == static_cast<int32_t>(ErrorCode::kHeartbeatNoNode)) {
      // The master forgot us (timeout, or failover to another master): register
      // again at once, then heartbeat again so waiters get topic data (behaviour.md §2.1).
      TUBEMQ_LOG_INFO("master does not know producer " << client_id_ << "; re-registering");
      // The waiters of this round stay with it: they get the answer of the heartbeat
      // sent after re-registering, or the registration's error.
      session_.Register(1, [self = shared_from_this()](const Status& registered) {
        if (registered.ok()) {
          self->SendHeartbeat();
        } else {
          self->FinishHeartbeat(registered);
        }
      });
      return;
    }
    result = MasterError("producer heartbeat", response.errcode(), response.errmsg());
  }
  if (result.ok() && response.errcode() != static_cast<int32_t>(ErrorCode::kNotReady)) {
    if (response.brokerinfos_size() > 0) {
      ApplyBrokerList(response.brokerchecksum(),
                      {response.brokerinfos().begin(), response.brokerinfos().end()});
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ApplyGrants(response.has_authorizedinfo() ? &response.authorizedinfo() : nullptr,
                response.has_appdconfig() ? &response.appdconfig() : nullptr);
    // The topic map is replaced on every successful heartbeat (protocol.md §5.4),
    // never merged: partitions the master no longer reports are gone.
    std::map<std::string, meta::TopicPartitions> topics;
    for (const std::string& info : response.topicinfos()) {
      meta::TopicPartitions parsed;
      Status parse = meta::ParseProducerTopicInfo(info, brokers_, parsed);
      if (!parse.ok()) {
        TUBEMQ_LOG_WARN(parse.message());
        continue;
      }
      if (!parsed.partitions.empty()) topics[parsed.topic] = std::move(parsed);
    }
    CarryOverMissingTopics(topics);
    topics_ = std::move(topics);
    RebuildTargets();
  }
  FinishHeartbeat(result);
}

void Producer::Impl::FinishHeartbeat(const Status& status) {
  std::vector<Done> waiters;
  bool again = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status.ok()) {
      ++counters_.heartbeats_ok;
    } else {
      ++counters_.heartbeats_failed;
      TUBEMQ_LOG_WARN("producer heartbeat failed: " << status.message());
    }
    waiters = std::move(current_heartbeat_waiters_);
    current_heartbeat_waiters_.clear();
    again = !next_heartbeat_waiters_.empty() && session_.running();
    heartbeat_in_flight_ = again;
  }
  CallAll(waiters, status);
  if (again) SendHeartbeat();
}

// A master that has just restarted, or whose broker has not re-registered yet, answers
// with no partitions for topics that are still there. Dropping them at once would fail
// every send until the broker is back (behaviour.md §10 scenario 8), so a published
// topic missing from a heartbeat keeps its last partitions for a grace period; sends to
// a broker that really lost it fail there (403) and are retried elsewhere.
void Producer::Impl::CarryOverMissingTopics(std::map<std::string, meta::TopicPartitions>& fresh) {
  constexpr std::chrono::seconds kGrace{60};
  const auto now = std::chrono::steady_clock::now();
  // Topics reported again are no longer missing.
  for (auto it = topic_missing_since_.begin(); it != topic_missing_since_.end();) {
    it = fresh.count(it->first) != 0 ? topic_missing_since_.erase(it) : std::next(it);
  }
  for (auto& [topic, partitions] : topics_) {
    if (fresh.count(topic) != 0 || published_.count(topic) == 0) continue;
    auto [missing, first_time] = topic_missing_since_.try_emplace(topic, now);
    if (first_time) {
      TUBEMQ_LOG_INFO("the master reported no partitions for '"
                      << topic << "'; keeping the last ones for up to " << kGrace.count() << " s");
    }
    if (now - missing->second < kGrace) fresh[topic] = std::move(partitions);
  }
}

// --- publish -----------------------------------------------------------------------

void Producer::Impl::Publish(std::vector<std::string> topics, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& topic : topics) published_.insert(topic);
  }
  AwaitPublishable(std::move(topics), config_.register_attempts, std::move(done));
}

// A master that has just become active knows the topics but not yet their partitions:
// those come with the brokers' next reports to it (about a second after a failover on
// the real server). So a topic without writable partitions is asked for again, in the
// rounds and at the pace of registration, before publish gives up on it.
void Producer::Impl::AwaitPublishable(std::vector<std::string> topics, int attempts_left,
                                      Done done) {
  Heartbeat([self = shared_from_this(), topics = std::move(topics), attempts_left,
             done](const Status& status) mutable {
    const Status result = status.ok() ? self->CheckPublishable(topics) : status;
    const bool again = attempts_left > 1 && (result.code() == ErrorCode::kTopicUnpublished ||
                                             IsRetriable(result.code_value()));
    if (!again) {
      done(result);
      return;
    }
    service::AfterRetryPause(
        self->engine_->io(), std::chrono::milliseconds(self->config_.register_retry_wait_ms),
        [self] {
          std::lock_guard<std::mutex> lock(self->mutex_);
          return self->session_.running();
        },
        "the producer was closed while publishing", std::move(done),
        [self, topics = std::move(topics), attempts_left](Done next_done) mutable {
          self->AwaitPublishable(std::move(topics), attempts_left - 1, std::move(next_done));
        });
  });
}

Status Producer::Impl::CheckPublishable(const std::vector<std::string>& topics) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& topic : topics) {
    if (topics_.count(topic) == 0) {
      return Status(ErrorCode::kTopicUnpublished,
                    "topic '" + topic +
                        "' is not publishable: the master lists no writable partition for it"
                    " (is it deployed, and accepting publish?)");
    }
  }
  return Status::OK();
}

std::vector<PartitionInfo> Producer::Impl::Partitions(const std::string& topic) const {
  std::vector<PartitionInfo> out;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = topics_.find(topic);
  if (found == topics_.end()) return out;
  for (const meta::Partition& partition : found->second.partitions) {
    PartitionInfo info;
    info.key = partition.Key();
    info.topic = partition.topic;
    info.partition_id = partition.id;
    info.broker_id = partition.broker.id;
    info.broker_address = partition.broker.endpoint.ToString();
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<std::string> Producer::Impl::PublishedTopics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {published_.begin(), published_.end()};
}

Producer::Counters Producer::Impl::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Counters counters = counters_;
  counters.brokers_shielded = shield_.CountShielded(std::chrono::steady_clock::now());
  counters.reconnects = master_->reconnects() + broker_connections_.reconnects();
  counters.master_switches = master_->switches();
  counters.master_standby_answers = master_->standby_answers();
  return counters;
}

// --- close -------------------------------------------------------------------------

void Producer::Impl::StopSchedules() { probe_timer_->Cancel(); }

// Sends in flight get their answers first (bounded by the RPC timeout); then the master
// forgets us.
void Producer::Impl::Leave(Done done) {
  slot_freed_.notify_all();
  WhenDrained(rpc_timeout(), [self = shared_from_this(), done = std::move(done)] {
    pb::CloseRequestP2M request;
    request.set_clientid(self->client_id_);
    if (self->credentials_.enabled()) self->SignIfNeeded(*request.mutable_authinfo());
    self->master_->Call(
        Method::kProducerClose, request, self->rpc_timeout(),
        [done](const Status& status, codec::RpcReply&& reply, size_t) {
          pb::CloseResponseM2P response;
          Status result = status.ok() ? service::ParseReply(reply, response) : status;
          if (result.ok() && !response.success()) {
            result = MasterError("producer close", response.errcode(), response.errmsg());
          }
          done(result);
        });
  });
}

void Producer::Impl::OnClosed() {
  std::vector<Done> waiters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiters = std::move(next_heartbeat_waiters_);
    next_heartbeat_waiters_.clear();
  }
  CallAll(waiters, Status(ErrorCode::kClientShutdown, "the producer was closed"));
}

void Producer::Impl::ApplyGrants(const pb::MasterAuthorizedInfo* authorized,
                                 const pb::ApprovedClientConfig* approved) {
  if (authorized != nullptr) {
    visit_token_ = authorized->visitauthorizedtoken();
    if (!meta::Trim(authorized->authauthorizedtoken()).empty()) {
      auth_token_ = authorized->authauthorizedtoken();
    }
  }
  if (approved != nullptr) {
    config_id_ = approved->configid();
    if (approved->has_maxmsgsize()) {
      // The master's default maximum, clamped as the Java client does (1 MiB .. 20 MiB).
      max_message_size_ = std::clamp<int64_t>(approved->maxmsgsize(), 1 << 20, 20 << 20);
    }
  }
}

}  // namespace tubemq
