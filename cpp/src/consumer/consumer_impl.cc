// The consumer's membership of its group at the master: register, heartbeats (with
// subscription reports and rebalance results), flow-control rules, close.
#include "consumer/consumer_impl.h"

#include <algorithm>
#include <asio/steady_timer.hpp>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "log/log.h"
#include "meta/client_id.h"
#include "service/retry_pause.h"
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
                     std::vector<net::Endpoint> masters, std::shared_ptr<net::TlsContext> tls,
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
      heartbeat_timer_(
          service::PeriodicTimer::Create(engine_->io().get_executor(), "consumer-heartbeat")),
      sweep_timer_(
          service::PeriodicTimer::Create(engine_->io().get_executor(), "confirm-sweep")) {}

bool Consumer::Impl::Running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return life_.running();
}

std::vector<std::string> Consumer::Impl::HeldSubscribeInfo() const {
  std::vector<std::string> out;
  for (const meta::Partition& partition : cache_.Held()) {
    out.push_back(meta::FormatSubscribeInfo({client_id_, options_.group, partition}));
  }
  return out;
}

void Consumer::Impl::Start(Done done) {
  Status answer;
  bool registers = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    registers = life_.BeginStart("the consumer", answer);
  }
  if (!registers) {
    done(answer);  // never called with mutex_ held
    return;
  }
  Register(config_.register_attempts, [self = shared_from_this(), done](const Status& status) {
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->life_.EndStart(status.ok());
    }
    if (status.ok()) {
      std::weak_ptr<Impl> weak = self;
      // The first heartbeat goes out at once; a server-balanced member then asks again
      // quickly until its first rebalance event arrives (StartHeartbeats).
      self->StartHeartbeats(/*eager=*/!self->options_.client_balance);
      self->sweep_timer_->Start(std::chrono::seconds(1), std::chrono::seconds(1), [weak] {
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
    done(status);
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
  std::weak_ptr<Impl> weak = shared_from_this();
  // Decided and started under the mutex: Close() sets the state under it before it
  // cancels the timer, so a schedule started here is either cancelled by that Close()
  // or never started; a closed member never heartbeats again (nor keeps its process).
  std::lock_guard<std::mutex> lock(mutex_);
  if (!life_.live()) return;
  eager_heartbeats_left_ = eager && interval < period ? kEagerHeartbeats : 0;
  heartbeat_timer_->Start(interval, eager ? std::chrono::milliseconds(0) : period, [weak] {
    auto impl = weak.lock();
    if (!impl) return;
    impl->Heartbeat();
    impl->BrokerHeartbeats();
    if (impl->options_.client_balance) impl->ConsumeFromMax();
    bool slow_down = false;
    {
      std::lock_guard<std::mutex> lock(impl->mutex_);
      slow_down = impl->eager_heartbeats_left_ > 0 && --impl->eager_heartbeats_left_ == 0;
    }
    if (slow_down) impl->StartHeartbeats(/*eager=*/false);
  });
}

void Consumer::Impl::Register(int attempts_left, Done done) {
  if (options_.client_balance) {
    RegisterV2(attempts_left, std::move(done));
    return;
  }
  pb::RegisterRequestC2M request;
  request.set_clientid(client_id_);
  request.set_groupname(options_.group);
  request.set_hostname(local_host_);
  request.set_sessiontime(session_time_ms_);
  request.set_requirebound(!options_.session_key.empty());
  if (request.requirebound()) {
    request.set_sessionkey(options_.session_key);
    request.set_totalcount(options_.source_count);
    request.set_selectbig(options_.select_big);
    std::string required;
    for (const auto& [key, offset] : options_.bound_offsets) {
      required += (required.empty() ? "" : ",") + key + "=" + std::to_string(offset);
    }
    if (!required.empty()) request.set_requiredpartition(required);
    std::lock_guard<std::mutex> lock(mutex_);
    request.set_notallocated(not_allocated_);
  }
  for (const auto& [topic, condition] : TopicConditions()) {
    request.add_topiclist(topic);
    if (!condition.empty()) request.add_topiccondition(condition);
  }
  for (const auto& info : HeldSubscribeInfo()) request.add_subscribeinfo(info);
  // Always sent: the master answers with rules only when asked (behaviour.md §3.3).
  request.set_defflowcheckid(flow_rules_.default_id());
  request.set_groupflowcheckid(flow_rules_.group_id());
  request.set_qrypriorityid(flow_rules_.qry_priority_id());
  request.set_jdkversion(std::string("tubemq-python/") + kVersion);
  if (credentials_.enabled()) SignIfNeeded(*request.mutable_authinfo());
  master_->Call(
      Method::kConsumerRegister, request, rpc_timeout(),
      [self = shared_from_this(), attempts_left, done](const Status& status,
                                                       codec::RpcReply&& reply, size_t) {
        pb::RegisterResponseM2C response;
        Status result = status.ok() ? service::ParseReply(reply, response) : status;
        if (result.ok() && !response.success()) {
          result = Status(static_cast<ErrorCode>(response.errcode()),
                          "consumer registration refused by the master: " + response.errmsg());
        }
        if (result.ok()) {
          self->ApplyFlowControl(response.has_defflowcheckid() ? response.defflowcheckid() : -2,
                                 response.defflowcontrolinfo(),
                                 response.has_groupflowcheckid() ? response.groupflowcheckid() : -2,
                                 response.groupflowcontrolinfo(),
                                 response.has_qrypriorityid() ? response.qrypriorityid() : -2);
          std::lock_guard<std::mutex> lock(self->mutex_);
          if (response.has_authorizedinfo()) {
            self->visit_token_ = response.authorizedinfo().visitauthorizedtoken();
          }
          if (response.has_notallocated() && !response.notallocated()) {
            self->not_allocated_ = false;
          }
          Count(self->counters_.registrations);
          self->report_next_ = true;
          TUBEMQ_LOG_INFO("consumer " << self->client_id_ << " joined group "
                                      << self->options_.group);
        }
        self->AfterRegisterAttempt(result, attempts_left, done);
      });
}

bool Consumer::Impl::Closing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return life_.closing();
}

void Consumer::Impl::AfterRegisterAttempt(const Status& result, int attempts_left, Done done) {
  const bool fatal = !result.ok() && FatalRegisterCode(result.code_value());
  if (result.ok() || fatal || attempts_left <= 1) {
    done(result);
    return;
  }
  // Closed while registering (e.g. start interrupted by Ctrl-C): no retry. A pending
  // retry timer would also hold the I/O service busy and delay its stop.
  if (Closing()) {
    done(Status(ErrorCode::kClientShutdown, "the consumer was closed while registering"));
    return;
  }
  TUBEMQ_LOG_WARN("consumer registration failed (" << result.message() << "); retrying");
  auto self = shared_from_this();
  service::AfterRetryPause(
      engine_->io(), std::chrono::milliseconds(config_.register_retry_wait_ms),
      [self] { return !self->Closing(); }, "the consumer was closed while registering",
      std::move(done), [self, attempts_left](Done next_done) {
        self->Register(attempts_left - 1, std::move(next_done));
      });
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

void Consumer::Impl::Heartbeat() {
  if (options_.client_balance) {
    HeartbeatV2();
    return;
  }
  pb::HeartRequestC2M request;
  bool sent_result = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!life_.running() || heartbeat_in_flight_) return;
    heartbeat_in_flight_ = true;
    sent_result = !results_.empty();
    const bool report = report_next_ || sent_result;
    request.set_reportsubscribeinfo(report);
    if (sent_result) {
      const Event& result = results_.front();
      auto* event = request.mutable_event();
      event->set_rebalanceid(result.rebalance_id);
      event->set_optype(result.op_type);
      event->set_status(2);  // DONE
      for (const auto& info : result.subscribe_info) event->add_subscribeinfo(info);
    }
  }
  request.set_clientid(client_id_);
  request.set_groupname(options_.group);
  if (request.reportsubscribeinfo()) {
    for (const auto& info : HeldSubscribeInfo()) request.add_subscribeinfo(info);
  }
  request.set_defflowcheckid(flow_rules_.default_id());
  request.set_groupflowcheckid(flow_rules_.group_id());
  request.set_qrypriorityid(flow_rules_.qry_priority_id());
  if (credentials_.enabled()) SignIfNeeded(*request.mutable_authinfo());
  const bool reported = request.reportsubscribeinfo();
  master_->Call(Method::kConsumerHeartbeat, request, rpc_timeout(),
                [self = shared_from_this(), sent_result, reported](
                    const Status& status, codec::RpcReply&& reply, size_t) {
                  pb::HeartResponseM2C response;
                  Status result = status.ok() ? service::ParseReply(reply, response) : status;
                  if (result.ok() && reported) {
                    std::lock_guard<std::mutex> lock(self->mutex_);
                    self->report_next_ = false;
                  }
                  self->OnHeartbeatReply(result, response, sent_result);
                });
}

void Consumer::Impl::OnHeartbeatReply(const Status& status, pb::HeartResponseM2C& response,
                                      bool sent_result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heartbeat_in_flight_ = false;
  }
  Count(status.ok() && response.success() ? counters_.heartbeats_ok
                                            : counters_.heartbeats_failed);
  if (!status.ok()) {
    TUBEMQ_LOG_WARN("consumer heartbeat failed: " << status.message());
    return;  // an unacknowledged result stays queued for the next heartbeat
  }
  if (!response.success()) {
    if (response.errcode() == static_cast<int32_t>(ErrorCode::kHeartbeatNoNode)) {
      // The master forgot us: join again, listing what we hold; keep consuming.
      TUBEMQ_LOG_INFO("master does not know consumer " << client_id_ << "; re-registering");
      Register(1, [](const Status& registered) {
        if (!registered.ok()) TUBEMQ_LOG_WARN("re-registration failed: " << registered.message());
      });
      return;
    }
    TUBEMQ_LOG_WARN("consumer heartbeat refused: " << response.errcode() << " "
                                                   << response.errmsg());
    return;
  }
  ApplyFlowControl(response.has_defflowcheckid() ? response.defflowcheckid() : -2,
                   response.defflowcontrolinfo(),
                   response.has_groupflowcheckid() ? response.groupflowcheckid() : -2,
                   response.groupflowcontrolinfo(),
                   response.has_qrypriorityid() ? response.qrypriorityid() : -2);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sent_result && !results_.empty()) results_.pop_front();
    if (response.has_authorizedinfo()) {
      visit_token_ = response.authorizedinfo().visitauthorizedtoken();
    }
  }
  bool apply_bound_offsets = false;
  bool not_applied_warning = false;
  {
    // The master may clear the group's flag in the very reply that brings this member's
    // first CONNECT (another member acked first); the offsets still belong to that
    // CONNECT, so the decision is taken per event, before the flag is updated (§3.10).
    std::lock_guard<std::mutex> lock(mutex_);
    const bool connect = response.has_event() && (response.event().optype() == 1 ||
                                                  response.event().optype() == 10);
    if (!options_.session_key.empty() && connect && !bound_offsets_decided_) {
      bound_offsets_decided_ = true;
      apply_bound_offsets = bound_offsets_applied_ = not_allocated_;
      not_applied_warning = !not_allocated_ && !options_.bound_offsets.empty();
    }
    if (response.has_notallocated() && !response.notallocated()) not_allocated_ = false;
  }
  if (not_applied_warning) {
    // Once per member: whoever set bound_offsets expects them, and silence here once
    // cost a Spark job its data (a retried task resumed at a discarded attempt's commits).
    TUBEMQ_LOG_WARN("consumer " << client_id_ << ": bound_offsets not applied: session '"
                                << options_.session_key << "' of group " << options_.group
                                << " was allocated before this member joined, so its "
                                   "partitions resume at the group's committed offsets");
  }
  if (response.has_event() && response.event().rebalanceid() > 0) {
    bool was_eager = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      was_eager = eager_heartbeats_left_ > 0;
      eager_heartbeats_left_ = 0;
    }
    if (was_eager) StartHeartbeats(/*eager=*/false);  // the first event is here
    Event event;
    event.apply_bound_offsets = apply_bound_offsets;
    event.rebalance_id = response.event().rebalanceid();
    event.op_type = response.event().optype();
    event.subscribe_info.assign(response.event().subscribeinfo().begin(),
                                response.event().subscribeinfo().end());
    QueueEvent(std::move(event));
  }
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

std::optional<bool> Consumer::Impl::BoundOffsetsApplied() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (options_.session_key.empty() || !bound_offsets_decided_) return std::nullopt;
  return bound_offsets_applied_;
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

void Consumer::Impl::Close(Done done) {
  bool registered = false;
  bool closes = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closes = life_.BeginClose(registered);
  }
  if (!closes) {
    done(Status::OK());  // never called with mutex_ held
    return;
  }
  heartbeat_timer_->Cancel();
  sweep_timer_->Cancel();
  auto finish = [self = shared_from_this(), done](const Status& status) {
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->life_.EndClose();
    }
    done(status);
  };
  if (!registered) {
    cache_.Close();
    finish(Status::OK());
    return;
  }
  // Hand every partition back at its broker first (a batch still out is rolled back,
  // so it is delivered again to whoever gets the partition), then leave the group.
  std::vector<consumer::RmtDataCacheCsm::Removed> removed;
  for (const meta::Partition& partition : cache_.Held()) {
    if (auto item = cache_.Remove(partition.Key())) removed.push_back(std::move(*item));
  }
  cache_.Close();
  auto remaining = std::make_shared<std::atomic<size_t>>(removed.size() + 1);
  auto leave = [self = shared_from_this(), finish, remaining](const Status&) {
    if (--*remaining != 0) return;
    pb::CloseRequestC2M request;
    request.set_clientid(self->client_id_);
    request.set_groupname(self->options_.group);
    if (self->credentials_.enabled()) self->SignIfNeeded(*request.mutable_authinfo());
    self->master_->Call(Method::kConsumerClose, request, self->rpc_timeout(),
                        [finish](const Status& status, codec::RpcReply&& reply, size_t) {
                          pb::CloseResponseM2C response;
                          Status result =
                              status.ok() ? service::ParseReply(reply, response) : status;
                          finish(result);
                        });
  };
  for (const auto& item : removed) {
    UnregisterAtBroker(item.partition, item.last_pack_consumed && !item.was_in_use, leave);
  }
  leave(Status::OK());
}

}  // namespace tubemq
