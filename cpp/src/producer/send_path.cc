// The producer's send path (behaviour.md §2.5-2.8): local checks, partition choice,
// the SendMessage request, the reply, retries that cannot duplicate, broker shielding,
// and the in-flight window that gives callers backpressure.
#include <algorithm>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "codec/rpc_envelope.h"
#include "log/log.h"
#include "meta/text.h"
#include "meta/message_data.h"
#include "producer/producer_impl.h"
#include "service/rpc_call.h"
#include "tubemq/names.h"

namespace tubemq {
namespace {

using Clock = std::chrono::steady_clock;

// Failures after which the broker certainly did not store the message.
bool NotStored(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kConnectFailed:
    case ErrorCode::kRemoteException:
    case ErrorCode::kForbidden:
    case ErrorCode::kServerReceiveOverflow:
    case ErrorCode::kInternalServerError:
    case ErrorCode::kServiceUnavailable:
      return true;
    default:
      return false;
  }
}

// The request went out but no verdict came back.
bool Ambiguous(const Status& status) {
  return status.code() == ErrorCode::kRequestTimeout ||
         status.code() == ErrorCode::kConnectionClosed ||
         status.code() == ErrorCode::kProtocolError ||
         status.code() == ErrorCode::kServiceStopped;
}

// SendMessageRequestP2B.data (BrokerService.proto).
constexpr uint32_t kDataField = 4;

bool HasKey(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

struct Producer::Impl::SendJob {
  std::string topic;
  std::optional<std::string> key;
  std::optional<std::string> partition;  // pinned by the caller
  meta::MessageData data;
  int32_t checksum = 0;  // of data, computed once for every attempt
  std::string msg_type;
  std::string msg_time;
  SendCallback callback;
  int attempts = 0;
  std::set<int32_t> failed_brokers;  // avoided by retries where possible
};

// The partition a request went to, with the strings its result reports, built once
// per heartbeat's topic map rather than on every reply.
struct Producer::Impl::SendTarget {
  meta::Partition partition;
  std::string key;             // partition.Key()
  std::string broker_address;  // partition.broker.endpoint.ToString()
};

void Producer::Impl::RebuildTargets() {
  targets_.clear();
  for (const auto& [topic, partitions] : topics_) {
    TopicTargets& entry = targets_[topic];
    entry.targets.reserve(partitions.partitions.size());
    entry.keys.reserve(partitions.partitions.size());
    for (const meta::Partition& partition : partitions.partitions) {
      entry.targets.push_back(std::make_shared<const SendTarget>(
          SendTarget{partition, partition.Key(), partition.broker.endpoint.ToString()}));
      entry.keys.push_back(entry.targets.back()->key);
    }
  }
}

bool Producer::Impl::AcquireSendSlot(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++slot_waiters_;
  const bool free = slot_freed_.wait_for(lock, wait, [this] {
    return in_flight_ < options_.max_in_flight || !session_.running();
  });
  --slot_waiters_;
  if (!free) return false;
  // A closed producer takes the slot too: the send then fails with 420 and gives it back.
  ++in_flight_;
  return true;
}

int32_t Producer::Impl::InFlight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

void Producer::Impl::FreeSendSlot() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_ > 0) --in_flight_;
    ++finishing_;
    // A sender waiting on a full window is woken once a batch of places is free (or
    // none is in use), not on every reply: waking it per reply cost a context switch
    // per message, and it then sent one message per wake. Its wait re-checks the window
    // at its deadline, so a bounded wait still takes a place that freed meanwhile.
    wake = slot_waiters_ > 0 &&
           (options_.max_in_flight - in_flight_ >= SlotWakeBatch() || in_flight_ == 0);
  }
  if (wake) slot_freed_.notify_all();
}

void Producer::Impl::SendFinished() {
  std::function<void()> drained;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --finishing_;
    // Only the last send out takes the close's continuation. (Clearing it on every
    // release dropped it whenever close() began with two or more sends in flight; the
    // close then waited for its safety timer, the RPC timeout, 10 s by default.)
    if (in_flight_ == 0 && finishing_ == 0 && on_drained_) {
      drained = std::move(on_drained_);
      on_drained_ = nullptr;
    }
  }
  if (drained) drained();
}

void Producer::Impl::WhenDrained(std::chrono::milliseconds deadline, std::function<void()> then) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_ > 0 || finishing_ > 0) {
      // Whichever comes first, the last reply or the deadline, runs `then`, once. The
      // drain also cancels the deadline's wait: left pending, it kept the I/O service
      // busy, and stopping the service (the last client's close) waits up to 1 s for
      // pending work to run out. The timer's own strand orders that cancel, posted from
      // whichever I/O thread got the last reply, with the timer's expiry.
      auto timer = std::make_shared<asio::steady_timer>(asio::make_strand(engine_->io()), deadline);
      auto once = std::make_shared<std::once_flag>();
      auto run = [once, timer, then = std::move(then)] {
        std::call_once(*once, then);
        asio::post(timer->get_executor(), [timer] { timer->cancel(); });
      };
      on_drained_ = run;
      // The wait holds `run`, which holds the timer: the cycle ends when the wait
      // completes, by expiry or by the cancel above.
      timer->async_wait([run](const asio::error_code&) { run(); });
      return;
    }
  }
  then();
}

void Producer::Impl::Send(OutgoingMessage message, SendCallback callback) {
  auto job = std::make_shared<SendJob>();
  job->callback = std::move(callback);
  job->topic = std::string(meta::Trim(message.topic));
  job->key = std::move(message.key);
  job->partition = std::move(message.partition);
  job->msg_type = message.msg_type;
  job->msg_time = message.msg_time;
  // The checks that need no producer state run before the lock; the rest, and the
  // choice of partition, under one lock in Attempt(). Failures go through the callback,
  // which FinishSend() calls without holding mutex_.
  Status local = CheckLocally(*job, message);
  Attempt(std::move(job), &local);
}

Status Producer::Impl::CheckLocally(SendJob& job, OutgoingMessage& message) {
  if (job.topic.empty()) return Status(ErrorCode::kTopicBlank, "the topic is blank");
  if (message.body.empty()) return Status(ErrorCode::kBodyEmpty, "the message body is empty");
  std::string attribute;
  Status built = meta::BuildAttribute(message, attribute);
  if (!built.ok()) return built;
  job.data = meta::EncodeMessageData(attribute, std::move(message.body));
  job.checksum = meta::MaskedCrc32(job.data);
  return Status::OK();
}

// Called with mutex_ held, on a first attempt: the checks against the producer's state,
// in the order the caller sees their errors (a closed producer first, then the local
// checks, then the topic's).
Status Producer::Impl::CheckAgainstState(const SendJob& job, const Status& local) const {
  if (!session_.running()) return Status(ErrorCode::kClientShutdown, "the producer is closed");
  if (!local.ok()) return local;
  if (published_.count(job.topic) == 0) {
    return Status(ErrorCode::kTopicUnpublished,
                  "topic '" + job.topic + "' is not published by this producer");
  }
  const auto found = topics_.find(job.topic);
  if (found == topics_.end() || found->second.partitions.empty()) {
    return Status(ErrorCode::kTopicNoPartition,
                  "topic '" + job.topic + "' has no writable partition at the moment");
  }
  const auto routes = targets_.find(job.topic);
  if (job.partition &&
      (routes == targets_.end() || !HasKey(routes->second.keys, *job.partition))) {
    return Status(ErrorCode::kTopicNoPartition,
                  "partition '" + *job.partition + "' is not a writable partition of topic '" +
                      job.topic + "' at the moment");
  }
  const int64_t limit = found->second.max_message_size > 0 ? found->second.max_message_size
                                                           : max_message_size_;
  if (static_cast<int64_t>(job.data.size()) > limit) {
    return Status(ErrorCode::kMessageTooLarge,
                  "message of " + std::to_string(job.data.size()) +
                      " bytes (body and attributes) exceeds the maximum of " +
                      std::to_string(limit) + " bytes for topic '" + job.topic + "'");
  }
  return Status::OK();
}

void Producer::Impl::Attempt(std::shared_ptr<SendJob> job, const Status* first_check) {
  std::shared_ptr<const SendTarget> target;
  std::shared_ptr<net::ClientConnection> connection;
  int64_t visit_token = 0;
  std::string auth_token;
  Status refused;  // by the first attempt's checks
  bool parked = false;         // until its topic is published
  bool publish_topic = false;  // and this send starts that publish
  {
    // The one lock of a send: state checks (first attempt), partition choice, tokens and
    // the broker's connection. Retries still go out while closing: close waits for
    // sends in flight.
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_check != nullptr) {
      refused = CheckAgainstState(*job, *first_check);
      // Unpublished, or published a moment ago by a send whose publish is under way (its
      // partitions not known yet): wait for that publish. Any other fault fails now.
      const bool publishing = awaiting_publish_.count(job->topic) != 0 &&
                              (refused.ok() || refused.code() == ErrorCode::kTopicNoPartition);
      if (refused.code() == ErrorCode::kTopicUnpublished || publishing) {
        const std::string problem = names::TopicProblem(job->topic);
        if (problem.empty()) {
          publish_topic = ParkUntilPublished(job);
          parked = true;
        } else {
          refused = Status(ErrorCode::kTopicUnpublished,
                           "topic '" + job->topic + "' cannot be published: " + problem);
        }
      }
    }
    if (refused.ok() && !parked) {
      const auto found = topics_.find(job->topic);
      const auto routes = targets_.find(job->topic);
      if (found != topics_.end() && routes != targets_.end()) {
        const auto now = Clock::now();
        const auto& partitions = found->second.partitions;
        const meta::Partition* partition = router_.Choose(
            job->topic, partitions, job->key,
            [this, &job, now](const meta::Partition& candidate) {
              return job->failed_brokers.count(candidate.broker.id) == 0 &&
                     !shield_.Shielded(candidate.broker.id, now);
            },
            job->partition, &routes->second.keys);
        if (partition != nullptr) {
          // targets_ is built from the same vector, index for index.
          target = routes->second.targets[static_cast<size_t>(partition - partitions.data())];
        }
      }
      if (target) {
        visit_token = visit_token_;
        if (!auth_token_.empty()) {
          auth_token = auth_token_;
        } else if (credentials_.enabled()) {
          auth_token = credentials_.BrokerToken();
        }
        const auto link = broker_links_.find(target->partition.broker.id);
        if (link != broker_links_.end() && !link->second->closed() &&
            link->second->endpoint() == target->partition.broker.endpoint) {
          connection = link->second;
        }
      }
    }
  }
  if (parked) {
    if (publish_topic) {
      Publish({job->topic}, [self = shared_from_this(), topic = job->topic](const Status& status) {
        self->OnPublishedOnSend(topic, status);
      });
    }
    return;
  }
  if (!refused.ok()) {
    FinishSend(job, refused, SendResult{});  // never under mutex_
    return;
  }
  if (!target) {
    // A pinned partition can stop being writable between the check and a retry.
    FinishSend(job,
               Status(ErrorCode::kTopicNoPartition,
                      job->partition ? "partition '" + *job->partition +
                                           "' is not a writable partition of topic '" +
                                           job->topic + "' at the moment"
                                     : "topic '" + job->topic +
                                           "' has no writable partition at the moment"),
               SendResult{});
    return;
  }
  if (!connection) {
    // First send to this broker, or its connection was lost: ask the pool (which counts
    // the reconnect), and remember the answer for the sends that follow.
    connection = broker_connections_.Get(target->partition.broker.endpoint);
    std::lock_guard<std::mutex> lock(mutex_);
    broker_links_[target->partition.broker.id] = connection;
  }
  const meta::Partition& chosen = target->partition;
  pb::SendMessageRequestP2B request;
  request.set_clientid(client_id_);
  request.set_topicname(job->topic);
  request.set_partitionid(chosen.id);
  request.set_flag(job->data.flag);
  request.set_checksum(job->checksum);
  request.set_sentaddr(sent_addr_);
  if (!job->msg_type.empty()) request.set_msgtype(job->msg_type);
  if (!job->msg_time.empty()) request.set_msgtime(job->msg_time);
  auto* auth = request.mutable_authinfo();
  auth->set_visitauthorizedtoken(visit_token);
  if (!auth_token.empty()) auth->set_authauthorizedtoken(std::move(auth_token));
  ++job->attempts;
  // The `data` field goes into the frame from the job's own buffers, encoded here after
  // the request's other fields: the body is copied once, into the frame, and the job
  // keeps it for a retry.
  const std::string data_key = codec::LengthDelimitedKey(kDataField, job->data.size());
  service::SendRequest(
      *connection, codec::Method::kSendMessage, request, rpc_timeout(),
      [self = shared_from_this(), job, target](const Status& status, codec::RpcReply&& reply) {
        self->OnSendReply(job, *target, status, std::move(reply));
      },
      {data_key, job->data.head, job->data.body});
}

// Publish on first send: a Kafka or Pulsar producer needs no declaration before its
// first send to a topic, and a send that failed instead (with no callback to tell, as
// produce() allows) was lost without a word. The send waits, in the in-flight window,
// for the same publish publish() runs; sends to the topic meanwhile wait with it.
bool Producer::Impl::ParkUntilPublished(std::shared_ptr<SendJob> job) {
  auto& parked = awaiting_publish_[job->topic];
  parked.push_back(std::move(job));
  return parked.size() == 1;
}

void Producer::Impl::OnPublishedOnSend(const std::string& topic, const Status& status) {
  std::vector<std::shared_ptr<SendJob>> parked;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = awaiting_publish_.find(topic);
    if (found == awaiting_publish_.end()) return;
    parked = std::move(found->second);
    awaiting_publish_.erase(found);
  }
  if (!status.ok()) {
    for (const auto& job : parked) FinishSend(job, status, SendResult{});
    return;
  }
  // The first attempt's checks again, now against the published topic (its partitions,
  // its size limit, a pinned partition, a close meanwhile).
  const Status local = Status::OK();
  for (auto& job : parked) Attempt(std::move(job), &local);
}

void Producer::Impl::OnSendReply(std::shared_ptr<SendJob> job, const SendTarget& target,
                                 const Status& status, codec::RpcReply&& reply) {
  const meta::Partition& partition = target.partition;
  pb::SendMessageResponseB2P response;
  Status result = status.ok() ? service::ParseReply(reply, response) : status;
  if (result.ok() && !response.success()) {
    result = Status(static_cast<ErrorCode>(response.errcode()),
                    "broker " + target.broker_address + " refused the message for " +
                        target.key + ": " + response.errmsg());
  }
  const bool retry = !result.ok() && NotStored(result) && job->attempts <= options_.send_retries;
  const auto now = Clock::now();
  {
    // One lock for the shield's verdict and the counters.
    std::lock_guard<std::mutex> lock(mutex_);
    if (result.ok()) {
      shield_.OnSuccess(partition.broker.id);
    } else if (result.code() == ErrorCode::kServiceUnavailable) {
      shield_.OnUnavailable(partition.broker.id, now);
    } else if (result.code() == ErrorCode::kConnectFailed ||
               result.code() == ErrorCode::kRequestTimeout ||
               result.code() == ErrorCode::kConnectionClosed) {
      // Refused, silent (a blackholed or hung broker) or dropping connections: steer
      // sends elsewhere for a while, as for a broker we cannot reach.
      shield_.OnUnreachable(partition.broker.id, now,
                            /*probeable=*/result.code() != ErrorCode::kRequestTimeout);
    }
    if (retry) {
      ++counters_.retries;
    } else {
      ++(result.ok() ? counters_.sent_ok : counters_.sent_failed);
    }
  }
  if (result.ok()) {
    SendResult sent;
    sent.topic = job->topic;
    sent.partition_key = target.key;
    sent.partition_id = partition.id;
    sent.broker_address = target.broker_address;
    sent.message_id = response.has_messageid() ? response.messageid() : -2;
    if (!response.has_messageid()) {
      int64_t parsed = 0;
      if (meta::ParseInt(response.errmsg(), parsed)) sent.message_id = parsed;
    }
    sent.append_time = response.has_appendtime() ? response.appendtime() : -2;
    sent.append_offset = response.has_appendoffset() ? response.appendoffset() : -2;
    sent.attempts = job->attempts;
    FinishSend(job, Status::OK(), std::move(sent), /*counted=*/true);
    return;
  }
  if (retry) {
    job->failed_brokers.insert(partition.broker.id);
    Retry(std::move(job), result);
    return;
  }
  if (Ambiguous(result)) {
    // A timeout after the request went out gets a code of its own, because its
    // `retriable` must say "not safely": a caller retrying a plain 1000 would store the
    // message twice whenever the broker had stored it. A lost connection keeps its code
    // (retriable, behaviour.md §10 scenario 6) and only carries the note.
    const ErrorCode code = result.code() == ErrorCode::kRequestTimeout
                               ? ErrorCode::kSendOutcomeUnknown
                               : result.code();
    result = Status(code, result.message() +
                              " (the broker may have stored the message; it was not "
                              "re-sent, to avoid a duplicate)");
  } else if (job->attempts > 1) {
    result = Status(result.code(),
                    result.message() + " (after " + std::to_string(job->attempts) + " attempts)");
  }
  FinishSend(job, result, SendResult{}, /*counted=*/true);
}

void Producer::Impl::Retry(std::shared_ptr<SendJob> job, const Status& why) {
  // counters_.retries was counted with the reply.
  TUBEMQ_LOG_DEBUG("retrying a send to '" << job->topic << "' after: " << why.message());
  // A short pause, growing with each attempt, lets a busy broker (419) recover.
  auto timer = std::make_shared<asio::steady_timer>(
      engine_->io(), std::chrono::milliseconds(50 * job->attempts));
  timer->async_wait([self = shared_from_this(), timer, job](const asio::error_code&) {
    self->Attempt(job, nullptr);
  });
}

void Producer::Impl::FinishSend(const std::shared_ptr<SendJob>& job, const Status& status,
                                SendResult&& result, bool counted) {
  if (!counted) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(status.ok() ? counters_.sent_ok : counters_.sent_failed);
  }
  // The place is free before anyone hears the outcome: whoever learns of it may send
  // again at once, and must find the window open. (Freed after the callback, a send made
  // on hearing of the previous one, from the delivery thread or an asyncio loop, could be
  // refused as a full window while this I/O thread had yet to give the place back.)
  FreeSendSlot();
  if (job->callback) {
    SendCallback callback = std::move(job->callback);
    job->callback = nullptr;
    callback(status, std::move(result));
  }
  SendFinished();
}

void Producer::Impl::SignIfNeeded(pb::MasterCertificateInfo& certificate) const {
  // The stock master wants fresh credentials on every request while authentication
  // is on; a token alone is refused (protocol.md §8.1).
  if (credentials_.enabled()) credentials_.Sign(certificate);
}

}  // namespace tubemq
