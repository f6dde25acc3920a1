// The server-balanced membership: register, heartbeats carrying subscription reports
// and rebalance results, and the rebalance events themselves (behaviour.md §3.3-3.5).
#include "consumer/server_balanced.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "MasterService.pb.h"
#include "consumer/consumer_impl.h"
#include "log/log.h"
#include "meta/subscribe_info.h"
#include "service/rpc_call.h"
#include "tubemq/version.h"

namespace tubemq {
namespace {

using codec::Method;

enum EventType : int32_t {
  kConnect = 1,
  kDisconnect = 2,
  kOnlyConnect = 10,
  kOnlyDisconnect = 20,
};

// Runs `done` once after `count` completions.
Membership::Done CountDown(size_t count, Membership::Done done) {
  auto left = std::make_shared<std::atomic<size_t>>(count);
  return [left, done](const Status&) {
    if (--*left == 0) done(Status::OK());
  };
}

}  // namespace

std::vector<std::string> ServerBalancedMembership::HeldSubscribeInfo() const {
  std::vector<std::string> out;
  for (const meta::Partition& partition : consumer_.cache_.Held()) {
    out.push_back(meta::FormatSubscribeInfo(
        {consumer_.client_id_, consumer_.options_.group, partition}));
  }
  return out;
}

std::optional<bool> ServerBalancedMembership::BoundOffsetsApplied() const {
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  if (consumer_.options_.session_key.empty() || !bound_offsets_decided_) return std::nullopt;
  return bound_offsets_applied_;
}

void ServerBalancedMembership::RegisterOnce(Done done) {
  const ConsumerOptions& options = consumer_.options_;
  pb::RegisterRequestC2M request;
  request.set_clientid(consumer_.client_id_);
  request.set_groupname(options.group);
  request.set_hostname(consumer_.local_host_);
  request.set_sessiontime(consumer_.session_time_ms_);
  request.set_requirebound(!options.session_key.empty());
  if (request.requirebound()) {
    request.set_sessionkey(options.session_key);
    request.set_totalcount(options.source_count);
    request.set_selectbig(options.select_big);
    std::string required;
    for (const auto& [key, offset] : options.bound_offsets) {
      required += (required.empty() ? "" : ",") + key + "=" + std::to_string(offset);
    }
    if (!required.empty()) request.set_requiredpartition(required);
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    request.set_notallocated(not_allocated_);
  }
  for (const auto& [topic, condition] : consumer_.TopicConditions()) {
    request.add_topiclist(topic);
    if (!condition.empty()) request.add_topiccondition(condition);
  }
  for (const auto& info : HeldSubscribeInfo()) request.add_subscribeinfo(info);
  // Always sent: the master answers with rules only when asked (behaviour.md §3.3).
  const auto& rules = consumer_.flow_rules_;
  request.set_defflowcheckid(rules.default_id());
  request.set_groupflowcheckid(rules.group_id());
  request.set_qrypriorityid(rules.qry_priority_id());
  request.set_jdkversion(std::string("tubemq-python/") + kVersion);
  if (consumer_.credentials_.enabled()) consumer_.SignIfNeeded(*request.mutable_authinfo());
  consumer_.master_->Call(
      Method::kConsumerRegister, request, consumer_.rpc_timeout(),
      [self = consumer_.shared_from_this(), this, done](const Status& status,
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
          if (response.has_notallocated() && !response.notallocated()) not_allocated_ = false;
          Consumer::Impl::Count(self->counters_.registrations);
          self->report_next_ = true;
          TUBEMQ_LOG_INFO("consumer " << self->client_id_ << " joined group "
                                      << self->options_.group);
        }
        done(result);
      });
}

void ServerBalancedMembership::Heartbeat() {
  pb::HeartRequestC2M request;
  bool sent_result = false;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (!consumer_.session_.running() || consumer_.heartbeat_in_flight_) return;
    consumer_.heartbeat_in_flight_ = true;
    sent_result = !results_.empty();
    const bool report = consumer_.report_next_ || sent_result;
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
  request.set_clientid(consumer_.client_id_);
  request.set_groupname(consumer_.options_.group);
  if (request.reportsubscribeinfo()) {
    for (const auto& info : HeldSubscribeInfo()) request.add_subscribeinfo(info);
  }
  const auto& rules = consumer_.flow_rules_;
  request.set_defflowcheckid(rules.default_id());
  request.set_groupflowcheckid(rules.group_id());
  request.set_qrypriorityid(rules.qry_priority_id());
  if (consumer_.credentials_.enabled()) consumer_.SignIfNeeded(*request.mutable_authinfo());
  const bool reported = request.reportsubscribeinfo();
  consumer_.master_->Call(
      Method::kConsumerHeartbeat, request, consumer_.rpc_timeout(),
      [self = consumer_.shared_from_this(), this, sent_result, reported](
          const Status& status, codec::RpcReply&& reply, size_t) {
        pb::HeartResponseM2C response;
        Status result = status.ok() ? service::ParseReply(reply, response) : status;
        if (result.ok() && reported) {
          std::lock_guard<std::mutex> lock(self->mutex_);
          self->report_next_ = false;
        }
        OnHeartbeatReply(result, response, sent_result);
      });
}

void ServerBalancedMembership::OnHeartbeatReply(const Status& status,
                                                pb::HeartResponseM2C& response,
                                                bool sent_result) {
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    consumer_.heartbeat_in_flight_ = false;
  }
  Consumer::Impl::Count(status.ok() && response.success() ? consumer_.counters_.heartbeats_ok
                                                          : consumer_.counters_.heartbeats_failed);
  if (!status.ok()) {
    TUBEMQ_LOG_WARN("consumer heartbeat failed: " << status.message());
    return;  // an unacknowledged result stays queued for the next heartbeat
  }
  if (!response.success()) {
    if (response.errcode() == static_cast<int32_t>(ErrorCode::kHeartbeatNoNode)) {
      consumer_.RegisterAgain();  // the master forgot us; keep consuming meanwhile
      return;
    }
    TUBEMQ_LOG_WARN("consumer heartbeat refused: " << response.errcode() << " "
                                                   << response.errmsg());
    return;
  }
  consumer_.ApplyFlowControl(response.has_defflowcheckid() ? response.defflowcheckid() : -2,
                             response.defflowcontrolinfo(),
                             response.has_groupflowcheckid() ? response.groupflowcheckid() : -2,
                             response.groupflowcontrolinfo(),
                             response.has_qrypriorityid() ? response.qrypriorityid() : -2);
  const ConsumerOptions& options = consumer_.options_;
  bool apply_bound_offsets = false;
  bool not_applied_warning = false;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (sent_result && !results_.empty()) results_.pop_front();
    if (response.has_authorizedinfo()) {
      consumer_.visit_token_ = response.authorizedinfo().visitauthorizedtoken();
    }
    // The master may clear the group's flag in the very reply that brings this member's
    // first CONNECT (another member acked first); the offsets still belong to that
    // CONNECT, so the decision is taken per event, before the flag is updated (§3.10).
    const bool connect = response.has_event() && (response.event().optype() == kConnect ||
                                                  response.event().optype() == kOnlyConnect);
    if (!options.session_key.empty() && connect && !bound_offsets_decided_) {
      bound_offsets_decided_ = true;
      apply_bound_offsets = bound_offsets_applied_ = not_allocated_;
      not_applied_warning = !not_allocated_ && !options.bound_offsets.empty();
    }
    if (response.has_notallocated() && !response.notallocated()) not_allocated_ = false;
  }
  if (not_applied_warning) {
    // Once per member: whoever set bound_offsets expects them, and silence here once
    // cost a Spark job its data (a retried task resumed at a discarded attempt's commits).
    TUBEMQ_LOG_WARN("consumer " << consumer_.client_id_ << ": bound_offsets not applied: session '"
                                << options.session_key << "' of group " << options.group
                                << " was allocated before this member joined, so its "
                                   "partitions resume at the group's committed offsets");
  }
  if (response.has_event() && response.event().rebalanceid() > 0) {
    consumer_.EndEagerHeartbeats();  // the first event is here
    Event event;
    event.apply_bound_offsets = apply_bound_offsets;
    event.rebalance_id = response.event().rebalanceid();
    event.op_type = response.event().optype();
    event.subscribe_info.assign(response.event().subscribeinfo().begin(),
                                response.event().subscribeinfo().end());
    QueueEvent(std::move(event));
  }
}

void ServerBalancedMembership::QueueEvent(Event event) {
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    events_.push_back(std::move(event));
  }
  ProcessNextEvent();
}

void ServerBalancedMembership::ProcessNextEvent() {
  Event event;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (event_busy_ || events_.empty() || !consumer_.session_.running()) return;
    event_busy_ = true;
    event = std::move(events_.front());
    events_.pop_front();
  }
  auto finished = [self = consumer_.shared_from_this(), this, event](const Status&) {
    Consumer::Impl::Count(self->counters_.rebalance_events);
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      event_busy_ = false;
      results_.push_back(event);  // acknowledged with the next heartbeat
      self->report_next_ = true;
    }
    // Ack promptly: the master hands out the group's next event only after this one.
    self->session_.HeartbeatNow();
    ProcessNextEvent();
  };
  TUBEMQ_LOG_INFO("rebalance " << event.rebalance_id << " op " << event.op_type << " for "
                               << event.subscribe_info.size() << " partition(s)");
  switch (event.op_type) {
    case kConnect:
    case kOnlyConnect:
      Connect(event, finished);
      break;
    case kDisconnect:
    case kOnlyDisconnect:
      Disconnect(event, finished);
      break;
    default:  // REPORT and unknown types: nothing to do but report
      finished(Status::OK());
  }
}

void ServerBalancedMembership::Connect(const Event& event, Done done) {
  std::vector<meta::Partition> wanted;
  const std::vector<meta::Partition> held = consumer_.cache_.Held();
  for (const auto& text : event.subscribe_info) {
    meta::SubscribeInfo info;
    Status parsed = meta::ParseSubscribeInfo(text, info);
    if (!parsed.ok()) {
      TUBEMQ_LOG_WARN(parsed.message());
      continue;
    }
    const bool already = std::any_of(held.begin(), held.end(), [&](const meta::Partition& p) {
      return p.Key() == info.partition.Key();
    });
    if (!already) wanted.push_back(info.partition);
  }
  if (wanted.empty()) {
    done(Status::OK());
    return;
  }
  auto each = CountDown(wanted.size(), done);
  const auto& bound_offsets = consumer_.options_.bound_offsets;
  for (const auto& partition : wanted) {
    int64_t boot_offset = -1;
    if (event.apply_bound_offsets) {
      const auto bound = bound_offsets.find(partition.Key());
      if (bound != bound_offsets.end()) boot_offset = bound->second;
    }
    consumer_.RegisterAtBroker(partition, /*retry_occupied=*/true, boot_offset, each);
  }
}

void ServerBalancedMembership::Disconnect(const Event& event, Done done) {
  std::vector<consumer::RmtDataCacheCsm::Removed> removed;
  for (const auto& text : event.subscribe_info) {
    meta::SubscribeInfo info;
    if (!meta::ParseSubscribeInfo(text, info).ok()) continue;
    if (auto item = consumer_.cache_.Remove(info.partition.Key())) {
      removed.push_back(std::move(*item));
    }
  }
  if (removed.empty()) {
    done(Status::OK());
    return;
  }
  // The ack follows the unregisters, so that the next owner finds the partition free.
  auto each = CountDown(removed.size(), done);
  for (const auto& item : removed) {
    consumer_.UnregisterAtBroker(item.partition, item.last_pack_consumed && !item.was_in_use,
                                 each);
  }
}

}  // namespace tubemq
