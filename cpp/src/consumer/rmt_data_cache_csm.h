// RmtDataCacheCsm: the consumer's cache of held partitions (behaviour.md §4). Each held
// partition is in exactly one of three places: the idle queue (selectable, served FIFO,
// so partitions take turns), the in-use map (one batch out, identified by a booking
// token), or the delayed map (resting until a time). A pull selects an idle partition;
// its confirm, or a fetch error, releases it with a delay.
//
// Resting in use: after an empty fetch with a short rest, a partition may keep its
// booking, so that the I/O thread that read the reply fetches it again itself when the
// rest is over (ContinueFetch); no poller wakes for fetches that bring nothing.
//
// Fetching ahead: an in-use partition's batch may be fetched before any poll asks for
// it, and then waits here, parked, until a poll takes it. The protocol allows one batch
// per partition between two confirms, so what runs ahead is the other partitions: while
// the application works on one batch, the next ones are already on their way, within a
// bound on the bytes of the batches on their way.
//
// Thread-safe: one mutex, never held while calling out; a condition variable wakes
// pollers when a partition becomes selectable, so waiting needs no fixed sleeps.
// Tokens come from a per-cache counter, never the clock, so a stale confirm context
// can never match a later selection (§4.4).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "meta/partition.h"
#include "tubemq/status.h"

namespace tubemq::consumer {

class RmtDataCacheCsm {
 public:
  using Clock = std::chrono::steady_clock;

  struct Selection {
    meta::Partition partition;
    uint64_t token = 0;
    bool last_pack_consumed = false;  // what the fetch must tell the broker
  };

  struct Removed {
    meta::Partition partition;
    bool last_pack_consumed = false;
    bool was_in_use = false;
  };

  struct Offsets {
    int64_t current = -1;
    int64_t max = -1;
  };

  // What the consumer made of one fetch (fetch_path.cc); opaque here.
  struct FetchResult;
  // A fetch's result waiting for a poll. `token` 0: a report for the poller (an error
  // the application must see) rather than a batch; it is parked whatever the bookings.
  struct Parked {
    std::string key;
    uint64_t token = 0;
    int64_t bytes = 0;
    std::shared_ptr<FetchResult> result;
  };
  // What WaitNext() found.
  enum class Next { kParked, kSelected };

  // Holds a partition (registered at its broker) as idle. False if already held.
  bool Add(const meta::Partition& partition, Offsets offsets);

  // Forgets a partition, wherever it is.
  std::optional<Removed> Remove(const std::string& key);
  std::vector<Removed> RemoveBroker(int32_t broker_id);

  // Takes the first idle partition, or says why there is none: 406 nothing held, 407
  // all resting, 408 all in use, 405 all the rest paused, or 420 after Close().
  Status Select(Selection& out);
  // The same, waiting until `deadline` for a partition to become selectable.
  Status WaitSelect(Clock::time_point deadline, Selection& out);

  // What a poll waits for, until `deadline`: first a selectable partition whose fetch
  // the caller starts at once - while the batches parked and those on their way (at
  // their expected size) stay within `ahead_bytes`; with 0, only when nothing is out -
  // else a parked result (taken; a batch's confirm timeout counts from now on). A
  // selection is marked fetching until its result is parked or the partition released.
  // Not OK: why there is neither.
  Status WaitNext(Clock::time_point deadline, int64_t ahead_bytes, Next& next, Parked& parked,
                  Selection& selection);
  // Parks a fetch's result; false (and dropped) if it is a batch whose partition's
  // booking moved on meanwhile (released, removed, or the cache closed).
  bool Park(Parked parked);

  // Gives an in-use partition back after `delay` (at once if 0). Ignored, and
  // false, unless `token` is the partition's current booking.
  bool Release(const std::string& key, uint64_t token, bool last_pack_consumed,
               std::chrono::microseconds delay);
  bool IsInUse(const std::string& key, uint64_t token) const;

  // After an empty fetch: the partition keeps its booking, with nothing out (the reply
  // settled the last batch), and stops counting as a fetch on its way. False, and
  // nothing changed, unless `token` is the partition's current booking.
  bool RestInUse(const std::string& key, uint64_t token);
  // At the end of that rest: true and `out` for the next fetch, which the caller starts
  // at once, when the booking is still `token`, the partition is not paused and the
  // fetch-ahead bound (as in WaitNext) has room. Otherwise false; a partition still
  // booked is then released as consumed, to wait for resume or for a poller.
  bool ContinueFetch(const std::string& key, uint64_t token, int64_t ahead_bytes,
                     Selection& out);

  // A paused partition stays held (and registered) but is not selected until resumed;
  // a batch already out is not affected. False for keys not held.
  bool Pause(const std::string& key);
  bool Resume(const std::string& key);
  std::vector<std::string> Paused() const;

  // Releases partitions in use for longer than `timeout` as not consumed (their batch
  // will be delivered again); returns their keys.
  std::vector<std::string> ExpireUnconfirmed(std::chrono::milliseconds timeout);

  // A negative figure is one the reply did not carry: the one known before stays.
  void UpdateOffsets(const std::string& key, Offsets offsets);
  std::optional<Offsets> OffsetsOf(const std::string& key) const;

  // First registration of a key by this consumer: true once, then false (§3.6). Booked
  // only by the caller after a registration succeeded.
  bool IsFirstRegistration(const std::string& key) const;
  void BookRegistration(const std::string& key);

  std::optional<meta::Partition> Find(const std::string& key) const;
  std::vector<meta::Partition> Held() const;
  std::map<int32_t, std::vector<meta::Partition>> HeldByBroker() const;
  size_t size() const;

  // Wakes every waiter; later selections fail with 420.
  void Close();

  // "<partition key>@<token>": opaque to users.
  static std::string ConfirmContext(const std::string& key, uint64_t token);
  static bool ParseConfirmContext(std::string_view context, std::string& key, uint64_t& token);

 private:
  struct Entry {
    meta::Partition partition;
    Offsets offsets;
    bool last_pack_consumed = false;
  };

  // Moves partitions whose rest is over to the idle queue; returns the earliest time a
  // still-resting one will be ready.
  std::optional<Clock::time_point> WakeRested(Clock::time_point now);
  Status SelectLocked(Selection& out);
  // Whether one more fetch fits within `ahead_bytes` (see WaitNext).
  bool RoomForFetchLocked(int64_t ahead_bytes) const;
  bool ReleaseLocked(const std::string& key, uint64_t token, bool last_pack_consumed,
                     std::chrono::microseconds delay);
  void ForgetLocked(const std::string& key);
  void DropParkedLocked(const std::string& key);

  mutable std::mutex mutex_;
  std::condition_variable selectable_;
  bool closed_ = false;
  uint64_t next_token_ = 1;
  std::map<std::string, Entry> held_;
  std::deque<std::string> idle_;
  struct Booking {
    uint64_t token;
    Clock::time_point since;
  };
  std::map<std::string, Booking> in_use_;
  std::map<std::string, Clock::time_point> resting_;
  std::set<std::string> registered_;
  std::set<std::string> paused_;
  std::set<std::string> fetching_;  // in use, their fetch under way
  std::set<std::string> resting_in_use_;  // in use, nothing out, refetched by RestInUse's caller
  std::deque<Parked> parked_;       // in arrival order
  int64_t parked_bytes_ = 0;        // the sum of their `bytes`
  // What a batch on its way is expected to weigh, for the fetch-ahead bound; until
  // batches tell, as much as a broker usually sends in one reply.
  static constexpr int64_t kMinBatchEstimate = int64_t{64} << 10;
  int64_t batch_bytes_estimate_ = int64_t{1} << 20;
};

}  // namespace tubemq::consumer
