// The partitions a consumer holds at their brokers, whichever membership chose them:
// register (take), unregister (give back, committing or rolling back the last batch) and
// the broker heartbeats that keep the leases (behaviour.md §3.6-3.7).
#include <asio/steady_timer.hpp>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "consumer/consumer_impl.h"
#include "log/log.h"
#include "meta/subscribe_info.h"
#include "service/rpc_call.h"

namespace tubemq {
namespace {

using codec::Method;

constexpr int32_t kOpRegister = 31;
constexpr int32_t kOpUnregister = 32;

}  // namespace

pb::RegisterRequestC2B Consumer::Impl::BrokerRegistration(const meta::Partition& partition,
                                                          int32_t op_type) const {
  pb::RegisterRequestC2B request;
  request.set_optype(op_type);
  request.set_clientid(client_id_);
  request.set_groupname(options_.group);
  request.set_topicname(partition.topic);
  request.set_partitionid(partition.id);
  return request;
}

void Consumer::Impl::RegisterAtBroker(const meta::Partition& partition, bool retry_occupied,
                                      int64_t boot_offset, Done done) {
  const std::string key = partition.Key();
  // The consume position applies only at this consumer's first registration of a
  // partition; later ones resume (behaviour.md §3.6). An explicit start offset wins,
  // and the broker ignores it under "max always", so that position is not sent then.
  int32_t read_status = 0;
  if (boot_offset < 0 && cache_.IsFirstRegistration(key)) {
    read_status = options_.position == ConsumePosition::kLatest      ? 1
                  : options_.position == ConsumePosition::kMaxAlways ? 2
                                                                     : 0;
  }
  pb::RegisterRequestC2B request = BrokerRegistration(partition, kOpRegister);
  request.set_readstatus(read_status);
  if (boot_offset >= 0) request.set_curroffset(boot_offset);
  const auto filters = options_.topics.find(partition.topic);
  if (filters != options_.topics.end()) {
    for (const auto& item : filters->second) request.add_filtercondstr(item);
  }
  request.set_qrypriorityid(flow_rules_.qry_priority_id());
  FillBrokerAuth(*request.mutable_authinfo());
  auto connection = BrokerConnection(partition);
  service::SendRequest(
      *connection, Method::kBrokerConsumerRegister, request, rpc_timeout(),
      [self = shared_from_this(), partition, key, retry_occupied, boot_offset, done](
          const Status& status, codec::RpcReply&& reply) {
        pb::RegisterResponseB2C response;
        Status result = status.ok() ? service::ParseReply(reply, response) : status;
        if (result.ok() && !response.success()) {
          result = Status(static_cast<ErrorCode>(response.errcode()), response.errmsg());
        }
        if (result.ok()) {
          self->cache_.BookRegistration(key);
          self->cache_.Add(partition, {response.has_curroffset() ? response.curroffset() : -1,
                                       response.has_maxoffset() ? response.maxoffset() : -1});
          TUBEMQ_LOG_DEBUG("registered " << key << " at offset " << response.curroffset());
          done(Status::OK());
          return;
        }
        // An expired registration of someone else is cleared by the refusal itself, so
        // one later attempt usually succeeds (§3.5.4).
        if (result.code() == ErrorCode::kPartitionOccupied && retry_occupied && self->Running()) {
          auto timer = std::make_shared<asio::steady_timer>(self->engine_->io(),
                                                            std::chrono::milliseconds(1500));
          timer->async_wait([self, partition, timer, boot_offset, done](const asio::error_code&) {
            self->RegisterAtBroker(partition, false, boot_offset, done);
          });
          return;
        }
        TUBEMQ_LOG_WARN("could not register " << key << ": " << result.message());
        done(result);
      });
}

void Consumer::Impl::UnregisterAtBroker(const meta::Partition& partition, bool consumed,
                                        Done done) {
  pb::RegisterRequestC2B request = BrokerRegistration(partition, kOpUnregister);
  request.set_readstatus(consumed ? 0 : 1);  // 0 commits the last batch, 1 rolls it back
  FillBrokerAuth(*request.mutable_authinfo());
  auto connection = BrokerConnection(partition);
  service::SendRequest(*connection, Method::kBrokerConsumerRegister, request, rpc_timeout(),
                       [key = partition.Key(), done](const Status& status, codec::RpcReply&&) {
                         // Errors are only logged: the broker lease expires anyway.
                         if (!status.ok()) {
                           TUBEMQ_LOG_INFO("unregister of " << key << ": " << status.message());
                         }
                         done(Status::OK());
                       });
}

void Consumer::Impl::FillBrokerAuth(pb::AuthorizedInfo& auth) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auth.set_visitauthorizedtoken(visit_token_);
  }
  if (credentials_.enabled()) auth.set_authauthorizedtoken(credentials_.BrokerToken());
}

void Consumer::Impl::BrokerHeartbeats() {
  if (!Running()) return;
  for (const auto& [broker_id, partitions] : cache_.HeldByBroker()) {
    pb::HeartBeatRequestC2B request;
    request.set_clientid(client_id_);
    request.set_groupname(options_.group);
    request.set_readstatus(0);
    request.set_qrypriorityid(flow_rules_.qry_priority_id());
    for (const auto& partition : partitions) {
      request.add_partitioninfo(meta::PartitionFullString(partition));
    }
    FillBrokerAuth(*request.mutable_authinfo());
    auto connection = BrokerConnection(partitions.front());
    service::SendRequest(
        *connection, Method::kBrokerConsumerHeartbeat, request, rpc_timeout(),
        [self = shared_from_this(), broker_id = broker_id](const Status& status,
                                                            codec::RpcReply&& reply) {
          pb::HeartBeatResponseB2C response;
          Status result = status.ok() ? service::ParseReply(reply, response) : status;
          if (!result.ok()) {
            // The broker lease (30 s) outlives a few missed heartbeats; fetches will
            // tell if the partitions are really gone.
            TUBEMQ_LOG_INFO("broker heartbeat to " << broker_id << " failed: " << result.message());
            return;
          }
          bool lost = false;
          if (!response.success() &&
              response.errcode() == static_cast<int32_t>(ErrorCode::kCertificateFailure)) {
            lost = !self->cache_.RemoveBroker(broker_id).empty();
            TUBEMQ_LOG_WARN("broker " << broker_id << " refused the heartbeat ("
                                      << response.errmsg() << "); its partitions are dropped");
          }
          for (const auto& failure : response.failureinfo()) {
            int32_t code = 0;
            meta::Partition partition;
            if (meta::ParsePartitionFailure(failure, code, partition).ok()) {
              TUBEMQ_LOG_INFO("broker dropped " << partition.Key() << " (" << code << ")");
              lost = self->cache_.Remove(partition.Key()).has_value() || lost;
            }
          }
          if (lost) {
            std::lock_guard<std::mutex> lock(self->mutex_);
            self->report_next_ = true;
          }
        });
  }
}

}  // namespace tubemq
