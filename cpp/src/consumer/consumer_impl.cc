// The consumer's steps in its session at the master (service::ClientSession), whichever
// its membership: registering through the membership, the heartbeat tick, flow-control
// rules, and leaving (partitions handed back, then the group).
#include "consumer/consumer_impl.h"

#include <algorithm>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "consumer/assigned_membership.h"
#include "consumer/server_balanced.h"
#include "log/log.h"
#include "meta/client_id.h"
#include "service/rpc_call.h"
#include "tubemq/version.h"

namespace tubemq {
namespace {

using codec::Method;

}  // namespace

int64_t Consumer::Impl::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Refusals a retry cannot cure (behaviour.md §3.3): the group or its members disagree.
bool Consumer::Impl::FatalRegisterCode(int32_t code) {
  return code == 400 || (code >= 424 && code <= 431) || code == 450 || code == 455 ||
         code == 415;
}

Consumer::Impl::Impl(ClientConfig config, ConsumerOptions options,
                     std::vector<meta::Endpoint> masters, std::shared_ptr<net::TlsContext> tls,
                     std::shared_ptr<service::IoEngine> engine)
    : config_(std::move(config)),
      options_(std::move(options)),
      credentials_(config_.auth_user, config_.auth_password),
      local_host_(config_.local_host.empty() ? meta::LocalIPv4() : config_.local_host),
      client_id_(meta::MakeClientId(options_.group, local_host_)),
      session_time_ms_(NowMs()),
      engine_(std::move(engine)),
      tls_(std::move(tls)),
      master_(std::make_shared<service::MasterSession>(engine_, std::move(masters), tls_)),
      broker_connections_(engine_->pool(), tls_),
      sweep_timer_(
          service::PeriodicTimer::Create(engine_->io().get_executor(), "confirm-sweep")),
      session_(*this, mutex_, engine_->io(),
               {"consumer", config_.register_attempts,
                std::chrono::milliseconds(config_.register_retry_wait_ms)}) {
  if (options_.assigned) {
    auto membership = std::make_unique<AssignedMembership>(*this);
    assigned_ = membership.get();
    membership_ = std::move(membership);
  } else {
    membership_ = std::make_unique<ServerBalancedMembership>(*this);
  }
}

namespace {

Status NotAssigned() {
  return Status(ErrorCode::kInvalidArgument,
                "partitions are chosen by the application only in an assigned consumer "
                "(ConsumerOptions::assigned, TubeMQ's client-balanced mode); this consumer's "
                "partitions are given by the master");
}

}  // namespace

Status Consumer::Impl::QueryPartitions(bool refresh, std::vector<PartitionMeta>& out) {
  return assigned_ ? assigned_->QueryPartitions(refresh, out) : NotAssigned();
}

Status Consumer::Impl::Assign(const std::string& partition_key, int64_t offset) {
  return assigned_ ? assigned_->Assign(partition_key, offset) : NotAssigned();
}

Status Consumer::Impl::Unassign(const std::string& partition_key, bool commit) {
  return assigned_ ? assigned_->Unassign(partition_key, commit) : NotAssigned();
}

std::optional<bool> Consumer::Impl::BoundOffsetsApplied() const {
  return membership_->BoundOffsetsApplied();
}

bool Consumer::Impl::Running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return session_.running();
}

void Consumer::Impl::RegisterOnce(Done done) { membership_->RegisterOnce(std::move(done)); }

bool Consumer::Impl::RetryMayCure(const Status& failure) const {
  return !FatalRegisterCode(failure.code_value());
}

void Consumer::Impl::OnRunning() {
  // The first heartbeat goes out at once; a server-balanced member then asks again
  // quickly until its first rebalance event arrives (StartHeartbeats).
  StartHeartbeats(/*eager=*/membership_->HeartbeatsEagerly());
  std::weak_ptr<Impl> weak = shared_from_this();
  sweep_timer_->Start(std::chrono::seconds(1), std::chrono::seconds(1), [weak] {
    auto impl = weak.lock();
    if (!impl) return;
    const auto expired = impl->cache_.ExpireUnconfirmed(
        std::chrono::milliseconds(impl->options_.confirm_timeout_ms));
    for (const auto& key : expired) {
      TUBEMQ_LOG_WARN("batch of " << key << " was not confirmed within "
                                  << impl->options_.confirm_timeout_ms
                                  << " ms; it will be delivered again");
    }
  });
}

void Consumer::Impl::StartHeartbeats(bool eager) {
  // The master hands a new member its partitions in the reply to a heartbeat, and its
  // balancer needs a moment after the registration to decide them. At the configured
  // period alone (10 s by default) a user polling a new group would wait that long for
  // the first message; so until the first rebalance event arrives, and for at most
  // kEagerHeartbeats ticks, the member asks every kEagerHeartbeatInterval.
  const auto period = std::chrono::milliseconds(config_.heartbeat_period_ms);
  const auto interval = eager ? std::min(period, kEagerHeartbeatInterval) : period;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    eager_heartbeats_left_ = eager && interval < period ? kEagerHeartbeats : 0;
  }
  session_.ScheduleHeartbeats(interval, eager ? std::chrono::milliseconds(0) : period);
}

void Consumer::Impl::HeartbeatTick() {
  membership_->Heartbeat();
  BrokerHeartbeats();
  membership_->OnTick();
  bool slow_down = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slow_down = eager_heartbeats_left_ > 0 && --eager_heartbeats_left_ == 0;
  }
  if (slow_down) StartHeartbeats(/*eager=*/false);
}

void Consumer::Impl::RegisterAgain() {
  TUBEMQ_LOG_INFO("master does not know consumer " << client_id_ << "; re-registering");
  session_.Register(1, [](const Status& registered) {
    if (!registered.ok()) TUBEMQ_LOG_WARN("re-registration failed: " << registered.message());
  });
}

void Consumer::Impl::EndEagerHeartbeats() {
  bool was_eager = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_eager = eager_heartbeats_left_ > 0;
    eager_heartbeats_left_ = 0;
  }
  if (was_eager) StartHeartbeats(/*eager=*/false);
}

std::vector<std::pair<std::string, std::string>> Consumer::Impl::TopicConditions() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [topic, filters] : options_.topics) {
    std::string condition;
    for (const auto& item : filters) {
      condition += (condition.empty() ? topic + "#" : ",") + item;
    }
    out.emplace_back(topic, std::move(condition));
  }
  return out;
}

void Consumer::Impl::ApplyFlowControl(int64_t def_id,
                                      const std::string& def_json, int64_t group_id,
                                      const std::string& group_json, int32_t qry_priority) {
  flow_rules_.UpdateDefault(def_id, def_json);
  flow_rules_.UpdateGroup(group_id, group_json, qry_priority);
}

std::map<std::string, std::pair<int64_t, int64_t>> Consumer::Impl::Offsets() const {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const meta::Partition& partition : cache_.Held()) {
    const auto offsets = cache_.OffsetsOf(partition.Key());
    if (offsets) out[partition.Key()] = {offsets->current, offsets->max};
  }
  return out;
}

Consumer::Counters Consumer::Impl::counters() const {
  const auto read = [](const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  Counters out;
  out.registrations = read(counters_.registrations);
  out.heartbeats_ok = read(counters_.heartbeats_ok);
  out.heartbeats_failed = read(counters_.heartbeats_failed);
  out.rebalance_events = read(counters_.rebalance_events);
  out.fetches = read(counters_.fetches);
  out.fetch_errors = read(counters_.fetch_errors);
  out.rests_cut_short = read(counters_.rests_cut_short);
  out.batches = read(counters_.batches);
  out.messages = read(counters_.messages);
  out.bytes = read(counters_.bytes);
  out.commits = read(counters_.commits);
  out.commit_failures = read(counters_.commit_failures);
  out.reconnects = master_->reconnects() + broker_connections_.reconnects();
  out.master_switches = master_->switches();
  out.master_standby_answers = master_->standby_answers();
  return out;
}

std::vector<std::string> Consumer::Impl::HeldPartitions() const {
  std::vector<std::string> out;
  for (const meta::Partition& partition : cache_.Held()) out.push_back(partition.Key());
  return out;
}

std::shared_ptr<net::ClientConnection> Consumer::Impl::BrokerConnection(
    const meta::Partition& partition) {
  return broker_connections_.Get(partition.broker.endpoint);
}

void Consumer::Impl::StopSchedules() { sweep_timer_->Cancel(); }

void Consumer::Impl::LeaveUnregistered() { cache_.Close(); }

// Every partition is handed back at its broker first (a batch still out is rolled back,
// so it is delivered again to whoever gets the partition); then the member leaves the
// group.
void Consumer::Impl::Leave(Done done) {
  std::vector<consumer::RmtDataCacheCsm::Removed> removed;
  for (const meta::Partition& partition : cache_.Held()) {
    if (auto item = cache_.Remove(partition.Key())) removed.push_back(std::move(*item));
  }
  cache_.Close();
  auto remaining = std::make_shared<std::atomic<size_t>>(removed.size() + 1);
  auto leave = [self = shared_from_this(), done = std::move(done), remaining](const Status&) {
    if (--*remaining != 0) return;
    pb::CloseRequestC2M request;
    request.set_clientid(self->client_id_);
    request.set_groupname(self->options_.group);
    if (self->credentials_.enabled()) self->SignIfNeeded(*request.mutable_authinfo());
    self->master_->Call(Method::kConsumerClose, request, self->rpc_timeout(),
                        [done](const Status& status, codec::RpcReply&& reply, size_t) {
                          pb::CloseResponseM2C response;
                          done(status.ok() ? service::ParseReply(reply, response) : status);
                        });
  };
  for (const auto& item : removed) {
    UnregisterAtBroker(item.partition, item.last_pack_consumed && !item.was_in_use, leave);
  }
  leave(Status::OK());
}

}  // namespace tubemq
