#include "consumer/rmt_data_cache_csm.h"

#include <algorithm>

#include "meta/text.h"

namespace tubemq::consumer {
namespace {

// Rests are honoured as given, to the microsecond: the short waits of an empty streak's start
// (flowctrl::EmptyStreakWait) are what keeps an idle partition from being fetched in a
// tight loop.
constexpr std::chrono::milliseconds kImmediate{0};

}  // namespace

bool RmtDataCacheCsm::Add(const meta::Partition& partition, Offsets offsets) {
  const std::string key = partition.Key();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_.count(key) != 0) return false;
    held_[key] = Entry{partition, offsets, false};
    idle_.push_back(key);
  }
  selectable_.notify_one();
  return true;
}

void RmtDataCacheCsm::ForgetLocked(const std::string& key) {
  held_.erase(key);
  paused_.erase(key);
  in_use_.erase(key);
  resting_.erase(key);
  idle_.erase(std::remove(idle_.begin(), idle_.end(), key), idle_.end());
  fetching_.erase(key);
  resting_in_use_.erase(key);
  DropParkedLocked(key);
}

void RmtDataCacheCsm::DropParkedLocked(const std::string& key) {
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->token != 0 && it->key == key) {
      parked_bytes_ -= it->bytes;
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<RmtDataCacheCsm::Removed> RmtDataCacheCsm::Remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = held_.find(key);
  if (found == held_.end()) return std::nullopt;
  // A partition resting in use has no batch out: it leaves as a resting one would.
  Removed removed{found->second.partition, found->second.last_pack_consumed,
                  in_use_.count(key) != 0 && resting_in_use_.count(key) == 0};
  ForgetLocked(key);
  return removed;
}

std::vector<RmtDataCacheCsm::Removed> RmtDataCacheCsm::RemoveBroker(int32_t broker_id) {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, entry] : held_) {
      if (entry.partition.broker.id == broker_id) keys.push_back(key);
    }
  }
  std::vector<Removed> out;
  for (const auto& key : keys) {
    if (auto removed = Remove(key)) out.push_back(std::move(*removed));
  }
  return out;
}

std::optional<RmtDataCacheCsm::Clock::time_point> RmtDataCacheCsm::WakeRested(
    Clock::time_point now) {
  std::optional<Clock::time_point> earliest;
  // Wake in order of readiness, so that the idle queue stays fair.
  std::vector<std::pair<Clock::time_point, std::string>> ready;
  for (auto it = resting_.begin(); it != resting_.end();) {
    if (it->second <= now) {
      ready.emplace_back(it->second, it->first);
      it = resting_.erase(it);
    } else {
      earliest = earliest ? std::min(*earliest, it->second) : it->second;
      ++it;
    }
  }
  std::sort(ready.begin(), ready.end());
  for (auto& item : ready) {
    if (paused_.count(item.second) == 0) idle_.push_back(std::move(item.second));
  }
  return earliest;
}

Status RmtDataCacheCsm::SelectLocked(Selection& out) {
  if (closed_) return Status(ErrorCode::kClientShutdown, "the consumer is closed");
  WakeRested(Clock::now());
  if (!idle_.empty()) {
    const std::string key = idle_.front();
    idle_.pop_front();
    Entry& entry = held_.at(key);
    out.partition = entry.partition;
    out.token = next_token_++;
    out.last_pack_consumed = entry.last_pack_consumed;
    in_use_[key] = Booking{out.token, Clock::now()};
    return Status::OK();
  }
  if (held_.empty()) return Status(ErrorCode::kNoPartitionAssigned, "no partition assigned");
  if (!resting_.empty() || !resting_in_use_.empty()) {
    return Status(ErrorCode::kAllPartitionWaiting, "every partition is waiting out a delay");
  }
  if (!in_use_.empty()) {
    return Status(ErrorCode::kAllPartitionInUse, "every partition has a batch awaiting confirm");
  }
  return Status(ErrorCode::kAllPartitionFrozen, "every partition is paused");
}

Status RmtDataCacheCsm::Select(Selection& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return SelectLocked(out);
}

Status RmtDataCacheCsm::WaitSelect(Clock::time_point deadline, Selection& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Status status = SelectLocked(out);
    if (status.ok() || closed_) return status;
    const auto earliest = WakeRested(Clock::now());
    const auto until = earliest ? std::min(*earliest, deadline) : deadline;
    if (Clock::now() >= deadline) return status;
    selectable_.wait_until(lock, until);
  }
}

Status RmtDataCacheCsm::WaitNext(Clock::time_point deadline, int64_t ahead_bytes, Next& next,
                                 Parked& parked, Selection& selection) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (closed_) return Status(ErrorCode::kClientShutdown, "the consumer is closed");
    // Tops the fetches up first, so every poll - also one that finds a batch waiting -
    // sets the partitions that became free (assigned, confirmed, rested) on their way,
    // within the memory bound (RoomForFetchLocked).
    Status status = RoomForFetchLocked(ahead_bytes)
                        ? SelectLocked(selection)
                        : Status(ErrorCode::kAllPartitionInUse, "a fetch is under way");
    if (status.ok()) {
      fetching_.insert(selection.partition.Key());
      next = Next::kSelected;
      return status;
    }
    if (!parked_.empty()) {
      parked = std::move(parked_.front());
      parked_.pop_front();
      parked_bytes_ -= parked.bytes;
      if (parked.token != 0 && paused_.count(parked.key) != 0) {
        // Paused while its batch was on the way: the batch goes back unseen (the next
        // fetch after resume tells the broker so, and the broker sends it again).
        in_use_.erase(parked.key);
        const auto entry = held_.find(parked.key);
        if (entry != held_.end()) entry->second.last_pack_consumed = false;
        continue;
      }
      const auto booking = in_use_.find(parked.key);
      if (parked.token != 0 && booking != in_use_.end()) booking->second.since = Clock::now();
      next = Next::kParked;
      return Status::OK();
    }
    if (status.code() == ErrorCode::kAllPartitionFrozen && !fetching_.empty()) {
      status = Status(ErrorCode::kAllPartitionInUse, "every partition has a batch on its way");
    }
    const auto now = Clock::now();
    if (now >= deadline) return status;
    const auto earliest = WakeRested(now);
    selectable_.wait_until(lock, earliest ? std::min(*earliest, deadline) : deadline);
  }
}

bool RmtDataCacheCsm::RoomForFetchLocked(int64_t ahead_bytes) const {
  // The memory the fetches may take is the batches parked plus those on their way,
  // each of the latter counted at the size batches have had lately.
  if (fetching_.empty() && parked_.empty()) return true;
  return ahead_bytes > 0 &&
         static_cast<int64_t>(fetching_.size() + 1) * batch_bytes_estimate_ + parked_bytes_ <=
             ahead_bytes;
}

bool RmtDataCacheCsm::Park(Parked parked) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (parked.token != 0) {
      const auto booking = in_use_.find(parked.key);
      if (closed_ || booking == in_use_.end() || booking->second.token != parked.token) {
        return false;
      }
      fetching_.erase(parked.key);
      // Follows the batches' size: up at once, down by an eighth per batch.
      batch_bytes_estimate_ = std::max({parked.bytes, kMinBatchEstimate,
                                        batch_bytes_estimate_ - batch_bytes_estimate_ / 8});
    }
    parked_bytes_ += parked.bytes;
    parked_.push_back(std::move(parked));
  }
  selectable_.notify_all();
  return true;
}

bool RmtDataCacheCsm::Release(const std::string& key, uint64_t token, bool last_pack_consumed,
                              std::chrono::microseconds delay) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ReleaseLocked(key, token, last_pack_consumed, delay)) return false;
  }
  // A resting partition changes the earliest wake-up time of waiters too.
  selectable_.notify_all();
  return true;
}

bool RmtDataCacheCsm::ReleaseLocked(const std::string& key, uint64_t token,
                                    bool last_pack_consumed, std::chrono::microseconds delay) {
  const auto booking = in_use_.find(key);
  if (booking == in_use_.end() || booking->second.token != token) return false;
  in_use_.erase(booking);
  fetching_.erase(key);
  resting_in_use_.erase(key);
  DropParkedLocked(key);  // a batch not handed out goes back with its partition
  auto entry = held_.find(key);
  if (entry == held_.end()) return false;
  entry->second.last_pack_consumed = last_pack_consumed;
  if (paused_.count(key) != 0) {
    // Stays held, out of every queue, until resumed.
  } else if (delay <= kImmediate) {
    idle_.push_back(key);
  } else {
    resting_[key] = Clock::now() + delay;
  }
  return true;
}

bool RmtDataCacheCsm::RestInUse(const std::string& key, uint64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto booking = in_use_.find(key);
  if (booking == in_use_.end() || booking->second.token != token) return false;
  held_.at(key).last_pack_consumed = true;
  fetching_.erase(key);
  resting_in_use_.insert(key);
  return true;
}

bool RmtDataCacheCsm::ContinueFetch(const std::string& key, uint64_t token,
                                    int64_t ahead_bytes, Selection& out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto booking = in_use_.find(key);
    if (closed_ || booking == in_use_.end() || booking->second.token != token ||
        resting_in_use_.count(key) == 0) {
      return false;
    }
    if (paused_.count(key) == 0 && RoomForFetchLocked(ahead_bytes)) {
      resting_in_use_.erase(key);
      fetching_.insert(key);
      booking->second.since = Clock::now();
      const Entry& entry = held_.at(key);
      out.partition = entry.partition;
      out.token = token;
      out.last_pack_consumed = entry.last_pack_consumed;
      return true;
    }
    ReleaseLocked(key, token, /*last_pack_consumed=*/true, kImmediate);
  }
  selectable_.notify_all();
  return false;
}

bool RmtDataCacheCsm::IsInUse(const std::string& key, uint64_t token) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto booking = in_use_.find(key);
  return booking != in_use_.end() && booking->second.token == token;
}

std::vector<std::string> RmtDataCacheCsm::ExpireUnconfirmed(std::chrono::milliseconds timeout) {
  std::vector<std::pair<std::string, uint64_t>> expired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = Clock::now();
    for (const auto& [key, booking] : in_use_) {
      // A partition resting in use has no batch out to expire.
      if (resting_in_use_.count(key) != 0) continue;
      if (now - booking.since > timeout) expired.emplace_back(key, booking.token);
    }
  }
  std::vector<std::string> keys;
  for (const auto& [key, token] : expired) {
    if (Release(key, token, /*last_pack_consumed=*/false, std::chrono::milliseconds(0))) {
      keys.push_back(key);
    }
  }
  return keys;
}

bool RmtDataCacheCsm::Pause(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (held_.count(key) == 0) return false;
  paused_.insert(key);
  idle_.erase(std::remove(idle_.begin(), idle_.end(), key), idle_.end());
  return true;
}

bool RmtDataCacheCsm::Resume(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_.count(key) == 0 || paused_.erase(key) == 0) return false;
    // Back in turn, unless a batch is out or a rest is still running.
    if (in_use_.count(key) == 0 && resting_.count(key) == 0) idle_.push_back(key);
  }
  selectable_.notify_all();
  return true;
}

std::vector<std::string> RmtDataCacheCsm::Paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {paused_.begin(), paused_.end()};
}

void RmtDataCacheCsm::UpdateOffsets(const std::string& key, Offsets offsets) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = held_.find(key);
  if (found == held_.end()) return;
  Offsets& known = found->second.offsets;
  if (offsets.current >= 0) known.current = offsets.current;
  if (offsets.max >= 0) known.max = offsets.max;
}

std::optional<RmtDataCacheCsm::Offsets> RmtDataCacheCsm::OffsetsOf(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = held_.find(key);
  if (found == held_.end()) return std::nullopt;
  return found->second.offsets;
}

bool RmtDataCacheCsm::IsFirstRegistration(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registered_.count(key) == 0;
}

void RmtDataCacheCsm::BookRegistration(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  registered_.insert(key);
}

std::optional<meta::Partition> RmtDataCacheCsm::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = held_.find(key);
  if (found == held_.end()) return std::nullopt;
  return found->second.partition;
}

std::vector<meta::Partition> RmtDataCacheCsm::Held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<meta::Partition> out;
  for (const auto& [key, entry] : held_) out.push_back(entry.partition);
  return out;
}

std::map<int32_t, std::vector<meta::Partition>> RmtDataCacheCsm::HeldByBroker() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int32_t, std::vector<meta::Partition>> out;
  for (const auto& [key, entry] : held_) out[entry.partition.broker.id].push_back(entry.partition);
  return out;
}

size_t RmtDataCacheCsm::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_.size();
}

void RmtDataCacheCsm::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    parked_.clear();
    parked_bytes_ = 0;
  }
  selectable_.notify_all();
}

std::string RmtDataCacheCsm::ConfirmContext(const std::string& key, uint64_t token) {
  return key + "@" + std::to_string(token);
}

bool RmtDataCacheCsm::ParseConfirmContext(std::string_view context, std::string& key,
                                          uint64_t& token) {
  const size_t at = context.rfind('@');
  if (at == std::string_view::npos || at == 0) return false;
  int64_t parsed = 0;
  if (!meta::ParseInt(context.substr(at + 1), parsed) || parsed <= 0) return false;
  key = std::string(context.substr(0, at));
  token = static_cast<uint64_t>(parsed);
  return true;
}

}  // namespace tubemq::consumer
