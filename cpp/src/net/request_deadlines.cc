#include "net/request_deadlines.h"

namespace tubemq::net {

bool RequestDeadlines::Add(int32_t serial, Clock::time_point deadline) {
  entries_.emplace(deadline, serial);
  // Requests usually share one timeout, so a new deadline is the latest and the armed
  // timer already covers it: no re-arm, no system call.
  return !armed_ || deadline < *armed_;
}

void RequestDeadlines::Remove(int32_t serial, Clock::time_point deadline) {
  entries_.erase({deadline, serial});
}

void RequestDeadlines::PopExpired(Clock::time_point now, std::vector<int32_t>& out) {
  auto it = entries_.begin();
  while (it != entries_.end() && it->first <= now) {
    out.push_back(it->second);
    it = entries_.erase(it);
  }
}

std::optional<RequestDeadlines::Clock::time_point> RequestDeadlines::Earliest() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.begin()->first;
}

}  // namespace tubemq::net
