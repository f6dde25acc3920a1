// The pull path (behaviour.md §3.8): select a ready partition, fetch one batch, decode
// and filter it, and give the partition back with the delay the reply and the flow
// control rules call for, at confirm time or at once on errors. Fetches run ahead of
// the polls (RmtDataCacheCsm): a poll starts the fetch of every partition it may, and
// takes the first batch parked; replies are decoded on the I/O thread. After an empty
// fetch with a short rest, the I/O thread fetches the partition again itself.
#include <algorithm>
#include <asio/steady_timer.hpp>
#include <future>

#include "BrokerService.pb.h"
#include "consumer/consumer_impl.h"
#include "consumer/fetch_reply.h"
#include "log/log.h"
#include "service/rpc_call.h"

namespace tubemq {
namespace {

using Clock = std::chrono::steady_clock;

// A blocking RPC for the application's thread (the bindings release the GIL).
template <typename Response>
Status CallAndWait(net::ClientConnection& connection, codec::Method method,
                   const google::protobuf::MessageLite& request, std::chrono::milliseconds timeout,
                   Response& response) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  auto reply_holder = std::make_shared<codec::RpcReply>();
  service::SendRequest(connection, method, request, timeout,
                       [promise, reply_holder](const Status& status, codec::RpcReply&& reply) {
                         *reply_holder = std::move(reply);
                         promise->set_value(status);
                       });
  Status status = future.get();  // the connection's deadline bounds this wait
  return status.ok() ? service::ParseReply(*reply_holder, response) : status;
}

// The rest a partition takes after a fetch that brought no batch (§3.8.1).
int32_t DelayForCode(int32_t code, int32_t min_limit_ms, int64_t not_found_wait_ms) {
  switch (code) {
    case 404: return static_cast<int32_t>(not_found_wait_ms);
    case 452: return min_limit_ms > 0 ? min_limit_ms : static_cast<int32_t>(not_found_wait_ms);
    case 403: return 2000;
    case 301: return 200;
    default: return 300;
  }
}

// How long a partition whose last commit rode on a fetch stays without data before it
// asks where it stands. (Counted in empty fetches, 6 as it was, this asked after about
// one gap in five at 1 000 msg/s over 4 partitions once the rests followed the data's
// pace, PacedEmptyWait.)
constexpr int64_t kQuietBeforeOffsetsCheckMs = 30;

// The longest rest after an empty fetch that the I/O thread waits out itself before
// fetching again (RefetchAfterRest). Through a poller, each such fetch cost a wake-up of
// the polling thread and a hand-over back to the I/O thread, about 65 us of CPU, which at
// the 1-8 ms rests of an empty streak's start (and a trickle of data) was most of the
// consumer's CPU. Longer rests are rare enough to go through the poller, and a client
// closed meanwhile never waits long for a pending rest.
constexpr std::chrono::milliseconds kLongestRestOnIoThread{50};

// The partitions of a topic on one broker share a store (one data file and one index,
// unless the topic has several stores), and a fetch reads the index from the group's
// position: entries of the other partitions are skipped, and a read that finds only
// theirs is a 200 that brings nothing. At the end of the index, that is "nothing new
// for this partition" as much as a 404 is, and is paced like one; without that, a
// partition whose neighbours are busy was fetched once for every message written to
// any of them (at 1 000 msg/s over 4 partitions, three in four fetches brought nothing).
// "At the end": at the store's last offset, or, while the store is busy (StoreWatch::
// Reached's `busy`), within this many bytes of it. A broker answers such a read with
// what its index shows so far, a few entries (of 28 bytes) short of the last offset
// while writes go on; a partition that must skip a backlog of its neighbours' entries
// is much further back, and is fetched again at once. At a quiet store the entries left
// are there to read: counted as the end, a partition whose own message lay one entry
// behind a sibling's rested a quarter of its quiet time (up to msg_not_found_wait_ms)
// before reading it.
constexpr int64_t kNearIndexEndBytes = 64 * 28;

bool ReadToIndexEnd(const consumer::FetchReply& fetched, bool store_busy) {
  if (!fetched.curr_offset || !fetched.max_offset) return false;
  const int64_t left = *fetched.max_offset - *fetched.curr_offset;
  return left <= 0 || (store_busy && left <= kNearIndexEndBytes);
}

}  // namespace

// What a poll hands out for one fetch: a batch, or a refusal the application must see.
struct consumer::RmtDataCacheCsm::FetchResult {
  Status status;
  ReceivedBatch batch;
};

Status Consumer::Impl::Poll(std::chrono::milliseconds wait, ReceivedBatch& batch) {
  if (!Running()) return Status(ErrorCode::kClientShutdown, "the consumer is closed");
  const auto deadline = Clock::now() + wait;
  for (;;) {
    consumer::RmtDataCacheCsm::Next next{};
    consumer::RmtDataCacheCsm::Parked parked;
    consumer::RmtDataCacheCsm::Selection selection;
    Status status =
        cache_.WaitNext(deadline, options_.fetch_ahead_bytes, next, parked, selection);
    if (!status.ok()) return status;
    if (next == consumer::RmtDataCacheCsm::Next::kSelected) {
      StartFetch(selection);  // its result is parked; this loop waits for it, or another
      continue;
    }
    FetchResult& result = *parked.result;
    if (!result.status.ok()) return result.status;
    batch = std::move(result.batch);
    // Summed here and added once: an atomic add per message was a sixth of a poll's
    // CPU on the caller's thread (about 7 us for a batch of 1 000).
    uint64_t bytes = 0;
    for (const ReceivedMessage& message : batch.messages) bytes += message.body.size();
    Count(counters_.batches);
    Count(counters_.messages, batch.messages.size());
    Count(counters_.bytes, bytes);
    return Status::OK();
  }
}

void Consumer::Impl::StartFetch(const consumer::RmtDataCacheCsm::Selection& selection) {
  const meta::Partition& partition = selection.partition;
  pb::GetMessageRequestC2B request;
  request.set_clientid(client_id_);
  request.set_partitionid(partition.id);
  request.set_groupname(options_.group);
  request.set_topicname(partition.topic);
  request.set_lastpackconsumed(selection.last_pack_consumed);
  request.set_manualcommitoffset(false);
  request.set_escflowctrl(flow_rules_.GroupUnderFlowControl(NowMs()));
  service::SendRequest(
      *BrokerConnection(partition), codec::Method::kGetMessage, request, rpc_timeout(),
      [self = shared_from_this(), selection, escaped = request.escflowctrl()](
          const Status& status, codec::RpcReply&& reply) {
        self->OnFetchReply(selection, escaped, status, std::move(reply));
      });
}

// On an I/O thread: decodes the reply and parks the batch (or the report the
// application must see), and gives the partition back on errors with the delay they
// call for. Nothing here blocks: a commit the reply implies rides on the next fetch.
void Consumer::Impl::OnFetchReply(const consumer::RmtDataCacheCsm::Selection& selection,
                                  bool escaped, const Status& transport,
                                  codec::RpcReply&& reply) {
  const meta::Partition& partition = selection.partition;
  const std::string key = partition.Key();
  const std::set<std::string>& filters = options_.topics.at(partition.topic);
  consumer::FetchReply fetched;
  Status status = transport.ok() ? service::ReplyStatus(reply) : transport;
  if (status.ok()) status = consumer::DecodeFetchReply(std::move(reply.data), filters, fetched);
  // One line per fetch (formatted only when DEBUG is on): the observable of pacing.
  TUBEMQ_LOG_DEBUG("fetch " << key << ": "
                            << (!status.ok()          ? status.code_value()
                                : fetched.success     ? 200
                                                      : fetched.err_code)
                            << (escaped ? " escFlowCtrl" : "") << " kept="
                            << fetched.messages.size() << " offset="
                            << fetched.curr_offset.value_or(-1) << "/"
                            << fetched.max_offset.value_or(-1));
  auto report = [this](Status error) {
    auto result = std::make_shared<FetchResult>();
    result->status = std::move(error);
    cache_.Park({std::string(), 0, 0, std::move(result)});
  };
  if (!status.ok()) {
    Count(counters_.fetch_errors);
    // Nothing reached us, but the request may have reached the broker: then it committed
    // the batch before (if the fetch said so) and holds a new one we never saw. A commit
    // flag sent again would commit that unseen batch, and lose it. So the next fetch
    // says "not consumed": the broker reads on from its commit, and a batch confirmed
    // here whose commit did not reach it comes again (at least once, never lost). A
    // broker that cannot be reached is retried after 200 ms, doubling to 5 s, not in a
    // tight loop (upstream has no back-off here, behaviour.md §3.8.1).
    int64_t delay = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const int failures = std::min(++transport_failures_[key], 6);
      delay = std::min<int64_t>(5000, int64_t{200} << (failures - 1));
    }
    cache_.Release(key, selection.token, /*last_pack_consumed=*/false,
                   std::chrono::milliseconds(delay));
    // Not the application's news: the fetch ran ahead of any poll, and is retried.
    TUBEMQ_LOG_INFO("fetch " << key << " failed, retried in " << delay
                             << " ms: " << status.message());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    transport_failures_.erase(key);
  }
  flowctrl::FetchOutcome outcome;
  outcome.code = fetched.success ? 200 : fetched.err_code;
  outcome.lag = fetched.curr_data_dlt.value_or(-1);
  outcome.escaped = fetched.esc_flow_ctrl;
  outcome.require_slow = fetched.require_slow;
  const int32_t code = outcome.code;
  Count(counters_.fetches);
  if (code != 200 && code != 404) Count(counters_.fetch_errors);
  if (code == 411 || code == 412 || code == 415) {
    cache_.Remove(key);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      report_next_ = true;
    }
    report(Status(static_cast<ErrorCode>(code),
                  "partition " + key + " was lost at its broker: " + fetched.err_msg));
    return;
  }
  if (code != 200) {
    outcome.default_delay_ms =
        DelayForCode(code, fetched.min_limit_time, options_.msg_not_found_wait_ms);
    std::chrono::microseconds delay{};
    int64_t quiet_ms = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto pacer = pacers_.try_emplace(key, !options_.topics.at(partition.topic).empty()).first;
      const int64_t now_ms = NowMs();
      delay = pacer->second.DelayAfter(outcome, flow_rules_.Snapshot(), now_ms);
      quiet_ms = pacer->second.QuietMs(now_ms);
    }
    // The broker saw the flag: the previous batch is settled either way.
    if (code == 404 && quiet_ms >= kQuietBeforeOffsetsCheckMs && TakeRiddenCommit(key)) {
      // A fetch carried a commit, but "nothing new" does not say where that left the
      // partition; without an answer offsets() and lag would never reach the end of an
      // idle partition. Once the partition has been idle for a few fetches, one
      // CommitOffset asks (a no-op for the broker: no batch is outstanding while the
      // partition is in our hands). Not at the first empty fetches: at a steady trickle
      // every batch is followed by some, and the next batch's reply carries the offsets
      // anyway.
      CommitHeld(partition, selection.token, delay, /*already_counted=*/true);
    } else if (code == 404) {
      RestAfterNothing(key, selection.token, delay);
    } else {
      cache_.Release(key, selection.token, true, delay);
    }
    // "Nothing new" is no news for the application; other refusals are.
    if (code != 404) report(Status(static_cast<ErrorCode>(code), fetched.err_msg));
    return;
  }

  // First: the siblings' fetches leave before this batch parks.
  const bool store_busy = WakeSiblings(key, fetched.max_offset);
  cache_.UpdateOffsets(key, {fetched.curr_offset.value_or(-1), fetched.max_offset.value_or(-1)});
  TakeRiddenCommit(key);  // this reply's offsets include it
  if (fetched.corrupt > 0) {
    TUBEMQ_LOG_WARN("dropping " << fetched.corrupt << " message(s) of " << key
                                << ": checksum or layout is wrong");
  }
  auto result = std::make_shared<FetchResult>();
  ReceivedBatch& batch = result->batch;
  batch.owner = std::move(fetched.owner);
  batch.topic = partition.topic;
  batch.partition_key = key;
  batch.offset = fetched.curr_offset.value_or(-1);
  batch.max_offset = fetched.max_offset.value_or(-1);
  batch.confirm_context = consumer::RmtDataCacheCsm::ConfirmContext(key, selection.token);
  batch.messages = std::move(fetched.messages);
  const int64_t bytes = fetched.payload_bytes;
  outcome.batch_bytes = bytes;
  outcome.messages = static_cast<int64_t>(batch.messages.size());
  outcome.caught_up = ReadToIndexEnd(fetched, store_busy);
  if (batch.messages.empty() && fetched.corrupt == 0 && outcome.caught_up) {
    // Only other partitions' entries (or messages the local filters dropped) up to the
    // end of the index: paced as an empty fetch, with 404's delay.
    outcome.nothing_new = true;
    outcome.default_delay_ms =
        DelayForCode(404, fetched.min_limit_time, options_.msg_not_found_wait_ms);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    booked_[key] = Booked{outcome, Clock::now()};
  }
  if (batch.messages.empty()) {
    // Everything was filtered out (or dropped as corrupt): the batch is settled here,
    // as a confirm would settle it - committed at once, so that offsets() moves with it,
    // unless commits ride on the next fetch anyway.
    CommitUnseen(partition, selection.token);
    return;
  }
  // Dropped if the partition's booking moved on meanwhile (released, removed, closed).
  cache_.Park({key, selection.token, bytes, std::move(result)});
}

void Consumer::Impl::RestAfterNothing(const std::string& key, uint64_t token,
                                      std::chrono::microseconds rest) {
  if (rest > kLongestRestOnIoThread || !cache_.RestInUse(key, token)) {
    cache_.Release(key, token, /*last_pack_consumed=*/true, rest);
  } else if (rest.count() == 0) {
    // No timer for no rest: at 1 000 msg/s over 4 partitions, a zero-length timer per
    // such fetch cost 8 % of a core (40 % against 48 % for the whole process).
    FetchAgain(key, token);
  } else {
    RefetchAfterRest(key, token, rest);
  }
}

void Consumer::Impl::FetchAgain(const std::string& key, uint64_t token) {
  consumer::RmtDataCacheCsm::Selection next;
  // Not when the partition was paused, removed or the consumer closed meanwhile, nor
  // beyond the fetch-ahead bound: the cache then hands the partition to the pollers.
  if (cache_.ContinueFetch(key, token, options_.fetch_ahead_bytes, next)) StartFetch(next);
}

void Consumer::Impl::RefetchAfterRest(const std::string& key, uint64_t token,
                                      std::chrono::microseconds rest) {
  // A sibling's reply may end the rest first (WakeSiblings); the timer then finds it over.
  const uint64_t rest_id = store_watch_.Rest(key, token);
  auto timer = std::make_shared<asio::steady_timer>(
      engine_->io(), flowctrl::RestEnd(Clock::now(), rest));
  std::weak_ptr<Impl> weak = shared_from_this();
  timer->async_wait([timer, weak, key, token, rest_id](const asio::error_code&) {
    const auto self = weak.lock();
    if (self && self->store_watch_.Expire(key, rest_id)) self->FetchAgain(key, token);
  });
}

bool Consumer::Impl::WakeSiblings(const std::string& key,
                                  const std::optional<int64_t>& max_offset) {
  if (!max_offset) return false;  // 404 replies carry no offsets on 2.4.0
  bool busy = false;
  for (const auto& [sibling, token] :
       store_watch_.Reached(key, *max_offset, Clock::now(), &busy)) {
    Count(counters_.rests_cut_short);
    FetchAgain(sibling, token);
  }
  return busy;
}

pb::CommitOffsetRequestC2B Consumer::Impl::CommitRequest(const meta::Partition& partition,
                                                         bool consumed) const {
  pb::CommitOffsetRequestC2B request;
  request.set_clientid(client_id_);
  request.set_topicname(partition.topic);
  request.set_partitionid(partition.id);
  request.set_groupname(options_.group);
  request.set_lastpackconsumed(consumed);
  return request;
}

void Consumer::Impl::CommitUnseen(const meta::Partition& partition, uint64_t token) {
  const std::string key = partition.Key();
  if (options_.commit_on_next_fetch) {
    RideCommit(key);
    RestAfterNothing(key, token, PacingDelayAfterConfirm(key, partition.topic));
    return;
  }
  CommitHeld(partition, token, PacingDelayAfterConfirm(key, partition.topic),
             /*already_counted=*/false);
}

void Consumer::Impl::CommitHeld(const meta::Partition& partition, uint64_t token,
                                std::chrono::microseconds delay, bool already_counted) {
  const std::string key = partition.Key();
  const pb::CommitOffsetRequestC2B request = CommitRequest(partition, true);
  // Not waited for: this runs on the I/O thread. The partition stays in use until the
  // answer, and whatever it is, the flag settles the batch on the next fetch.
  service::SendRequest(
      *BrokerConnection(partition), codec::Method::kCommitOffset, request, rpc_timeout(),
      [self = shared_from_this(), key, token, delay, already_counted](
          const Status& status, codec::RpcReply&& reply) {
        pb::CommitOffsetResponseB2C response;
        if (status.ok() && service::ParseReply(reply, response).ok() && response.success()) {
          if (!already_counted) Count(self->counters_.commits);
          self->cache_.UpdateOffsets(key, {response.has_curroffset() ? response.curroffset() : -1,
                                           response.has_maxoffset() ? response.maxoffset() : -1});
        }
        self->cache_.Release(key, token, true, delay);
      });
}

void Consumer::Impl::RideCommit(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  ridden_commits_.insert(key);
}

bool Consumer::Impl::TakeRiddenCommit(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ridden_commits_.erase(key) > 0;
}

Status Consumer::Impl::Confirm(const std::string& confirm_context, bool consumed,
                               CommitRoute route) {
  std::string key;
  uint64_t token = 0;
  if (!consumer::RmtDataCacheCsm::ParseConfirmContext(confirm_context, key, token)) {
    return Status(ErrorCode::kConfirmContextInvalid,
                  "'" + confirm_context + "' is not a confirm context of this consumer");
  }
  const auto partition = cache_.Find(key);
  if (!partition || !cache_.IsInUse(key, token)) {
    return Status(ErrorCode::kConfirmContextInvalid,
                  "the batch of " + key +
                      " is no longer outstanding (confirmed already, timed out, or the partition "
                      "moved to another consumer)");
  }
  const bool on_next_fetch = route == CommitRoute::kAsConfigured
                                 ? options_.commit_on_next_fetch
                                 : route == CommitRoute::kNextFetch;
  if (consumed && on_next_fetch) {
    // No round trip: the flag left with the partition below rides on its next fetch.
    Count(counters_.commits);
    RideCommit(key);
    cache_.Release(key, token, true, PacingDelayAfterConfirm(key, partition->topic));
    return Status::OK();
  }
  const pb::CommitOffsetRequestC2B request = CommitRequest(*partition, consumed);
  pb::CommitOffsetResponseB2C response;
  Status status = CallAndWait(*BrokerConnection(*partition), codec::Method::kCommitOffset,
                              request, rpc_timeout(), response);
  if (status.ok() && !response.success()) {
    status = Status(static_cast<ErrorCode>(response.errcode()),
                    "commit of " + key + " refused: " + response.errmsg());
  }
  Count(status.ok() ? counters_.commits : counters_.commit_failures);
  if (status.ok()) {
    cache_.UpdateOffsets(key, {response.has_curroffset() ? response.curroffset() : -1,
                               response.has_maxoffset() ? response.maxoffset() : -1});
  }
  // Even if the commit RPC failed, the next fetch carries the flag and settles it.
  cache_.Release(key, token, consumed, PacingDelayAfterConfirm(key, partition->topic));
  return status;
}

std::chrono::microseconds Consumer::Impl::PacingDelayAfterConfirm(const std::string& key,
                                                                  const std::string& topic) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto booked = booked_.find(key);
  if (booked == booked_.end()) return std::chrono::microseconds(0);
  flowctrl::FetchOutcome outcome = booked->second.outcome;
  outcome.processing_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - booked->second.replied)
          .count();
  auto pacer = pacers_.try_emplace(key, !options_.topics.at(topic).empty()).first;
  const std::chrono::microseconds delay =
      pacer->second.DelayAfter(outcome, flow_rules_.Snapshot(), NowMs());
  booked_.erase(booked);
  if (delay.count() > 0) return delay;
  return flowctrl::CaughtUpRest(outcome, options_.msg_not_found_wait_ms);
}

}  // namespace tubemq
