#include "producer/broker_shield.h"

#include <algorithm>

namespace tubemq::producer {
namespace {

constexpr std::chrono::milliseconds kUnavailableBan{50000};
constexpr std::chrono::milliseconds kFirstUnreachableBan{10000};
constexpr std::chrono::milliseconds kLongestUnreachableBan{300000};

}  // namespace

void BrokerShield::OnUnavailable(int32_t broker_id, Clock::time_point now) {
  Entry& entry = entries_[broker_id];
  entry.until = std::max(entry.until, now + kUnavailableBan);
}

void BrokerShield::OnUnreachable(int32_t broker_id, Clock::time_point now, bool probeable) {
  Entry& entry = entries_[broker_id];
  entry.probeable = probeable;
  entry.backoff = entry.backoff.count() == 0
                      ? kFirstUnreachableBan
                      : std::min(entry.backoff * 2, kLongestUnreachableBan);
  entry.until = std::max(entry.until, now + entry.backoff);
}

void BrokerShield::OnSuccess(int32_t broker_id) { entries_.erase(broker_id); }

bool BrokerShield::Shielded(int32_t broker_id, Clock::time_point now) const {
  const auto found = entries_.find(broker_id);
  return found != entries_.end() && found->second.until > now;
}

size_t BrokerShield::CountShielded(Clock::time_point now) const {
  size_t count = 0;
  for (const auto& [id, entry] : entries_) {
    if (entry.until > now) ++count;
  }
  return count;
}

std::vector<int32_t> BrokerShield::Probeable(Clock::time_point now) const {
  std::vector<int32_t> ids;
  for (const auto& [id, entry] : entries_) {
    if (entry.until > now && entry.probeable) ids.push_back(id);
  }
  return ids;
}

}  // namespace tubemq::producer
