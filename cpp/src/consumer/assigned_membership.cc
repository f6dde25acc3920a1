// The assigned membership (TubeMQ's client-balanced consumer): the V2 register and
// heartbeat, the master's metadata, and the application's Assign/Unassign. Taking and
// giving back a partition at its broker, fetching and confirming are the pull engine's
// (broker_registration.cc, fetch_path.cc).
#include "consumer/assigned_membership.h"

#include <future>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "consumer/consumer_impl.h"
#include "log/log.h"
#include "service/rpc_call.h"
#include "tubemq/version.h"

namespace tubemq {
namespace {

using codec::Method;
using Clock = std::chrono::steady_clock;

constexpr int32_t kSuccess = 200;
// The master is asked for metadata again only after this (Java: partMetaInfoCheckPeriodMs).
constexpr auto kMetadataMaxAge = std::chrono::seconds(10);
// A partition its broker refused as occupied is not asked for again within this.
constexpr auto kRefusalMemory = std::chrono::seconds(5);
// The held set is reported on change, and at least every this many heartbeats.
constexpr int kReportEveryHeartbeats = 10;

// "<topic>#<brokerId>:<partitionId>[,...]", one string per topic (protocol.md §5.8).
std::vector<std::string> FormatHeld(const std::vector<meta::Partition>& held) {
  std::map<std::string, std::string> by_topic;
  for (const meta::Partition& partition : held) {
    std::string& items = by_topic[partition.topic];
    if (!items.empty()) items += ",";
    items += std::to_string(partition.broker.id) + ":" + std::to_string(partition.id);
  }
  std::vector<std::string> out;
  for (const auto& [topic, items] : by_topic) out.push_back(topic + "#" + items);
  return out;
}

// Runs an asynchronous step and waits for its completion on the caller's thread (the
// bindings release the GIL). Every step completes: RPCs carry deadlines.
template <typename Step>
Status Await(Step step) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  step([promise](const Status& status) { promise->set_value(status); });
  return future.get();
}

using Done = Membership::Done;

}  // namespace

void AssignedMembership::FillSubscriptionReport(pb::ClientSubRepInfo& report,
                                                bool with_partitions) {
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  report.set_brokerconfigid(broker_config_id_);
  report.set_topicmetainfoid(topic_meta_id_);
  if (topic_meta_time_ms_ >= 0) report.set_lstassignedtime(topic_meta_time_ms_);
  report.set_reportsubinfo(with_partitions);
  if (with_partitions) {
    for (const auto& item : last_report_) report.add_partsubinfo(item);
  }
}

void AssignedMembership::FillOpsTaskInfo(pb::OpsTaskInfo& info) const {
  info.set_defflowcheckid(consumer_.flow_rules_.default_id());
  info.set_groupflowcheckid(consumer_.flow_rules_.group_id());
  info.set_qrypriorityid(consumer_.flow_rules_.qry_priority_id());
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  // Echoed until the master stops sending it (behaviour.md §5.3).
  if (from_max_ctrl_id_ >= 0) info.set_csmfrmmaxoffsetctrlid(from_max_ctrl_id_);
}

void AssignedMembership::ApplyOpsTaskInfo(const pb::OpsTaskInfo& info) {
  consumer_.ApplyFlowControl(info.has_defflowcheckid() ? info.defflowcheckid() : -2,
                             info.defflowcontrolinfo(),
                             info.has_groupflowcheckid() ? info.groupflowcheckid() : -2,
                             info.groupflowcontrolinfo(),
                             info.has_qrypriorityid() ? info.qrypriorityid() : -2);
  if (!info.has_csmfrmmaxoffsetctrlid() || info.csmfrmmaxoffsetctrlid() < 0) return;
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  if (info.csmfrmmaxoffsetctrlid() == from_max_ctrl_id_) return;
  from_max_ctrl_id_ = info.csmfrmmaxoffsetctrlid();
  // An order older than this client is history: it was meant for earlier members.
  if (from_max_ctrl_id_ > consumer_.session_time_ms_) from_max_pending_ = true;
}

void AssignedMembership::ApplyBrokers(int64_t config_id,
                                      const std::vector<std::string>& list) {
  if (list.empty()) return;  // sent only when our id is out of date
  Status first_error;
  meta::BrokerMap brokers =
      meta::ParseBrokerList(list, /*tls=*/consumer_.tls_ != nullptr, &first_error);
  if (!first_error.ok()) TUBEMQ_LOG_WARN("broker list: " << first_error.message());
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  brokers_ = std::move(brokers);
  broker_config_id_ = config_id;
}

void AssignedMembership::ApplyTopicMeta(int64_t meta_id,
                                        const std::vector<std::string>& list) {
  std::vector<meta::SubscribablePartition> partitions;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (meta_id == topic_meta_id_) return;
    for (const auto& text : list) {
      Status parsed = meta::ParseConsumerTopicMeta(text, brokers_, partitions);
      if (!parsed.ok()) TUBEMQ_LOG_WARN(parsed.message());  // that topic is skipped
    }
    topic_meta_ = std::move(partitions);
    topic_meta_id_ = meta_id;
    topic_meta_time_ms_ = Consumer::Impl::NowMs();
    topic_meta_known_ = true;
  }
  DropUnsubscribable();
}

void AssignedMembership::DropUnsubscribable() {
  std::vector<consumer::RmtDataCacheCsm::Removed> dropped;
  for (const meta::Partition& partition : consumer_.cache_.Held()) {
    bool subscribable = false;
    {
      std::lock_guard<std::mutex> lock(consumer_.mutex_);
      for (const auto& item : topic_meta_) {
        if (item.partition.Key() == partition.Key()) subscribable = item.subscribable;
      }
    }
    if (subscribable) continue;
    if (auto removed = consumer_.cache_.Remove(partition.Key())) {
      dropped.push_back(std::move(*removed));
    }
  }
  for (const auto& item : dropped) {
    TUBEMQ_LOG_WARN("partition " << item.partition.Key()
                                 << " is no longer subscribable; giving it back");
    consumer_.UnregisterAtBroker(item.partition, item.last_pack_consumed && !item.was_in_use,
                                 [](const Status&) {});
  }
}

void AssignedMembership::RegisterOnce(Done done) {
  pb::RegisterRequestC2MV2 request;
  request.set_clientid(consumer_.client_id_);
  request.set_groupname(consumer_.options_.group);
  request.set_hostname(consumer_.local_host_);
  request.set_sourcecount(consumer_.options_.source_count);
  request.set_nodeid(consumer_.options_.node_id);
  for (const auto& [topic, condition] : consumer_.TopicConditions()) {
    request.add_topiclist(topic);
    if (!condition.empty()) request.add_topiccondition(condition);
  }
  // Every register reports what is held: the master resets its record of this
  // client's holdings to what the register says (behaviour.md §5.3).
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    last_report_ = FormatHeld(consumer_.cache_.Held());
  }
  FillSubscriptionReport(*request.mutable_subrepinfo(), /*with_partitions=*/true);
  FillOpsTaskInfo(*request.mutable_opstaskinfo());
  request.set_jdkversion(std::string("tubemq-python/") + kVersion);
  if (consumer_.credentials_.enabled()) consumer_.SignIfNeeded(*request.mutable_authinfo());
  consumer_.master_->Call(
      Method::kConsumerRegisterV2, request, consumer_.rpc_timeout(),
      [self = consumer_.shared_from_this(), this, done](const Status& status,
                                                        codec::RpcReply&& reply, size_t) {
        pb::RegisterResponseM2CV2 response;
        Status result = status.ok() ? service::ParseReply(reply, response) : status;
        // V2 replies have no success flag: errCode 200 is success.
        if (result.ok() && response.errcode() != kSuccess) {
          result = Status(static_cast<ErrorCode>(response.errcode()),
                          "consumer registration refused by the master: " + response.errmsg());
        }
        if (result.ok()) {
          ApplyBrokers(response.brokerconfigid(),
                       {response.brokerconfiglist().begin(), response.brokerconfiglist().end()});
          if (response.has_opstaskinfo()) ApplyOpsTaskInfo(response.opstaskinfo());
          std::lock_guard<std::mutex> lock(self->mutex_);
          if (response.has_authorizedinfo()) {
            self->visit_token_ = response.authorizedinfo().visitauthorizedtoken();
          }
          heartbeats_since_report_ = 0;
          Consumer::Impl::Count(self->counters_.registrations);
          TUBEMQ_LOG_INFO("client-balanced consumer " << self->client_id_ << " joined group "
                                                      << self->options_.group);
        }
        done(result);
      });
}

void AssignedMembership::Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (!consumer_.session_.running() || consumer_.heartbeat_in_flight_) return;
    consumer_.heartbeat_in_flight_ = true;
  }
  std::vector<std::string> held = FormatHeld(consumer_.cache_.Held());
  bool report = false;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    report = consumer_.report_next_ || held != last_report_ ||
             ++heartbeats_since_report_ >= kReportEveryHeartbeats;
    if (report) last_report_ = held;
  }
  pb::HeartRequestC2MV2 request;
  request.set_clientid(consumer_.client_id_);
  request.set_groupname(consumer_.options_.group);
  FillSubscriptionReport(*request.mutable_subrepinfo(), report);
  FillOpsTaskInfo(*request.mutable_opstaskinfo());
  if (consumer_.credentials_.enabled()) consumer_.SignIfNeeded(*request.mutable_authinfo());
  consumer_.master_->Call(
      Method::kConsumerHeartbeatV2, request, consumer_.rpc_timeout(),
      [self = consumer_.shared_from_this(), this, report](const Status& status,
                                                          codec::RpcReply&& reply, size_t) {
        pb::HeartResponseM2CV2 response;
        Status result = status.ok() ? service::ParseReply(reply, response) : status;
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          self->heartbeat_in_flight_ = false;
          if (!result.ok() || response.errcode() != kSuccess) {
            self->report_next_ = true;  // the master may not have recorded it
          } else if (report) {
            self->report_next_ = false;
            heartbeats_since_report_ = 0;
          }
        }
        Consumer::Impl::Count(result.ok() && response.errcode() == kSuccess
                                  ? self->counters_.heartbeats_ok
                                  : self->counters_.heartbeats_failed);
        if (!result.ok()) {
          TUBEMQ_LOG_WARN("consumer heartbeat failed: " << result.message());
          return;
        }
        if (response.errcode() == static_cast<int32_t>(ErrorCode::kHeartbeatNoNode)) {
          self->RegisterAgain();  // the master forgot us; keep consuming meanwhile
          return;
        }
        if (response.errcode() != kSuccess) {
          TUBEMQ_LOG_WARN("consumer heartbeat refused: " << response.errcode() << " "
                                                         << response.errmsg());
          return;
        }
        ApplyBrokers(response.brokerconfigid(),
                     {response.brokerconfiglist().begin(), response.brokerconfiglist().end()});
        if (response.has_topicmetainfoid()) {
          ApplyTopicMeta(response.topicmetainfoid(), {response.topicmetainfolist().begin(),
                                                      response.topicmetainfolist().end()});
        }
        if (response.has_opstaskinfo()) ApplyOpsTaskInfo(response.opstaskinfo());
        if (response.has_authorizedinfo()) {
          std::lock_guard<std::mutex> lock(self->mutex_);
          self->visit_token_ = response.authorizedinfo().visitauthorizedtoken();
        }
      });
}

void AssignedMembership::ConsumeFromMax() {
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    if (!from_max_pending_ || !consumer_.session_.running()) return;
    from_max_pending_ = false;
  }
  // The admin asked the group to skip its backlog: every held partition starts again at
  // the max offset last seen for it, so what arrived since is still delivered.
  for (const meta::Partition& partition : consumer_.cache_.Held()) {
    const auto offsets = consumer_.cache_.OffsetsOf(partition.Key());
    const int64_t max_offset = offsets ? offsets->max : -1;
    if (!consumer_.cache_.Remove(partition.Key())) continue;
    TUBEMQ_LOG_INFO("consume from max: " << partition.Key() << " restarts at " << max_offset);
    consumer_.RegisterAtBroker(partition, /*retry_occupied=*/true, max_offset,
                     [key = partition.Key()](const Status& status) {
                       if (!status.ok()) {
                         TUBEMQ_LOG_WARN("could not move " << key << " to its max offset: "
                                                           << status.message());
                       }
                     });
  }
}

Status AssignedMembership::QueryPartitions(bool refresh, std::vector<PartitionMeta>& out) {
  if (!consumer_.Running()) return Status(ErrorCode::kClientShutdown, "the consumer is closed");
  bool fresh = false;
  pb::GetPartMetaRequestC2M request;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    fresh = !refresh && topic_meta_known_ && Clock::now() - topic_meta_queried_ < kMetadataMaxAge;
    request.set_brokerconfigid(broker_config_id_);
    request.set_topicmetainfoid(topic_meta_id_);
  }
  if (!fresh) {
    request.set_clientid(consumer_.client_id_);
    request.set_groupname(consumer_.options_.group);
    if (consumer_.credentials_.enabled()) consumer_.SignIfNeeded(*request.mutable_authinfo());
    auto response = std::make_shared<pb::GetPartMetaResponseM2C>();
    Status status = Await([&](Done done) {
      consumer_.master_->Call(Method::kGetPartitionMeta, request, consumer_.rpc_timeout(),
                    [response, done](const Status& status, codec::RpcReply&& reply, size_t) {
                      done(status.ok() ? service::ParseReply(reply, *response) : status);
                    });
    });
    if (!status.ok()) return status;
    if (response->errcode() != kSuccess) {
      return Status(static_cast<ErrorCode>(response->errcode()),
                    "partition metadata query refused by the master: " + response->errmsg());
    }
    ApplyBrokers(response->brokerconfigid(),
                 {response->brokerconfiglist().begin(), response->brokerconfiglist().end()});
    ApplyTopicMeta(response->topicmetainfoid(),
                   {response->topicmetainfolist().begin(), response->topicmetainfolist().end()});
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    topic_meta_queried_ = Clock::now();
    topic_meta_known_ = true;
  }
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  out.clear();
  for (const auto& item : topic_meta_) {
    out.push_back({item.partition.Key(), item.partition.topic, item.partition.broker.id,
                   item.partition.id, item.partition.broker.endpoint.ToString(),
                   item.subscribable});
  }
  return Status::OK();
}

Status AssignedMembership::Assign(const std::string& partition_key, int64_t offset) {
  std::vector<PartitionMeta> known;
  Status queried = QueryPartitions(/*refresh=*/false, known);
  if (!queried.ok()) return queried;
  std::optional<meta::Partition> partition;
  bool subscribable = false;
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    for (const auto& item : topic_meta_) {
      if (item.partition.Key() != partition_key) continue;
      partition = item.partition;
      subscribable = item.subscribable;
    }
    if (partition && subscribable) {
      const auto refused = refused_at_.find(partition_key);
      if (refused != refused_at_.end() && Clock::now() - refused->second < kRefusalMemory) {
        return Status(ErrorCode::kClientHighFrequencyRequest,
                      "partition " + partition_key +
                          " was refused by its broker less than 5 s ago; try again later");
      }
    }
  }
  if (!partition) {
    return Status(ErrorCode::kNotFound,
                  "partition " + partition_key +
                      " is not among the partitions of the subscribed topics");
  }
  if (!subscribable) {
    return Status(ErrorCode::kPartitionUnsubscribable,
                  "partition " + partition_key + " cannot be subscribed now");
  }
  // Taking a held partition again moves it: its batch in flight is dropped (the
  // broker discards an uncommitted batch at every registration).
  consumer_.cache_.Remove(partition_key);
  Status status = Await([&](Done done) {
    consumer_.RegisterAtBroker(*partition, /*retry_occupied=*/true, offset, std::move(done));
  });
  std::lock_guard<std::mutex> lock(consumer_.mutex_);
  consumer_.report_next_ = true;
  if (status.code() == ErrorCode::kPartitionOccupied ||
      status.code() == ErrorCode::kCertificateFailure) {
    refused_at_[partition_key] = Clock::now();
  } else if (status.ok()) {
    refused_at_.erase(partition_key);
  }
  return status;
}

Status AssignedMembership::Unassign(const std::string& partition_key, bool commit) {
  auto removed = consumer_.cache_.Remove(partition_key);
  if (!removed) return Status::OK();  // not held: nothing to give back
  {
    std::lock_guard<std::mutex> lock(consumer_.mutex_);
    consumer_.report_next_ = true;
  }
  return Await([&](Done done) {
    consumer_.UnregisterAtBroker(removed->partition, commit, std::move(done));
  });
}

}  // namespace tubemq
