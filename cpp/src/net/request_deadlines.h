// RequestDeadlines: the deadlines of one connection's pending requests, ordered by
// time, so that ONE timer per connection can serve them all. Creating, arming and
// cancelling an asio timer per request cost a heap object, a timer-queue insert and a
// cancel (with its completion handler) on every send; here a request costs one ordered
// insert and one erase.
//
// The structure only decides; the owner (ClientConnection) holds the timer. Add() says
// when the timer must be re-armed: only when the new deadline is earlier than the time
// the timer is armed for. Remove() never re-arms: the timer may then fire early, finds
// nothing due, and is re-armed for the earliest deadline left (at most one spurious
// wake per removal of the earliest, in practice about one per timeout period).
//
// Not thread-safe: used on the owning connection's strand only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace tubemq::net {

class RequestDeadlines {
 public:
  using Clock = std::chrono::steady_clock;

  // Records `serial`'s deadline. Returns true when the timer must be (re-)armed for
  // `deadline`, because nothing earlier is armed; the caller then arms it and calls Armed().
  bool Add(int32_t serial, Clock::time_point deadline);

  // Forgets `serial` (answered, or failed), given the deadline it was added with.
  void Remove(int32_t serial, Clock::time_point deadline);

  // Takes out every request due at `now`, earliest first (ties: by serial).
  void PopExpired(Clock::time_point now, std::vector<int32_t>& out);

  // The earliest deadline left, if any.
  std::optional<Clock::time_point> Earliest() const;

  // The timer is now armed for `when` / no longer armed (fired, or cancelled).
  void Armed(Clock::time_point when) { armed_ = when; }
  void Disarmed() { armed_.reset(); }
  std::optional<Clock::time_point> armed() const { return armed_; }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void Clear() { entries_.clear(); }

 private:
  std::set<std::pair<Clock::time_point, int32_t>> entries_;
  std::optional<Clock::time_point> armed_;
};

}  // namespace tubemq::net
