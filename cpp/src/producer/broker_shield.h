// Keeps sends away from brokers that are failing (behaviour.md §2.8): a broker that
// answers 503 (write service stopped) is avoided for 50 s; a broker we cannot reach
// (refused connect, no reply within the deadline, connection dropped) is avoided for a
// period that starts at 10 s and doubles with each further failure, up to 5 minutes;
// any successful send clears it, and so does a successful connect probe for a broker
// that refused or dropped connections (not for one that accepted and stayed silent: it
// would take connections and still not answer). Shielding only steers the choice of
// partition: when every broker of a topic is shielded, sends still go out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace tubemq::producer {

class BrokerShield {
 public:
  using Clock = std::chrono::steady_clock;

  void OnUnavailable(int32_t broker_id, Clock::time_point now);
  // `probeable`: the broker refused or dropped the connection, so a connect that
  // succeeds again says it is back.
  void OnUnreachable(int32_t broker_id, Clock::time_point now, bool probeable);
  void OnSuccess(int32_t broker_id);
  bool Shielded(int32_t broker_id, Clock::time_point now) const;
  // How many brokers are shielded at `now`.
  size_t CountShielded(Clock::time_point now) const;
  // Shielded brokers whose return a connect probe can tell.
  std::vector<int32_t> Probeable(Clock::time_point now) const;

 private:
  struct Entry {
    Clock::time_point until;
    std::chrono::milliseconds backoff{0};
    bool probeable = false;
  };
  std::map<int32_t, Entry> entries_;
};

}  // namespace tubemq::producer
