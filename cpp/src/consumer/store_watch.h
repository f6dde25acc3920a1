// Partitions of a topic on one broker share a store: one index, read by each partition
// from its own position (fetch_path.cc, ReadToIndexEnd). A partition that found nothing
// new rests a moment before it fetches again; while it rests, a reply for any of its
// siblings tells how far the shared index now reaches. If that is past where the index
// ended when the rest began, new entries were written, perhaps the resting partition's
// own: it fetches at once instead of waiting its rest out. The siblings' fetches, which
// a busy store makes anyway (each new entry is "nothing new" for the others), so probe
// the store for each other, and a message waits for the soonest of them rather than for
// its own partition's next fetch.
//
// The replies also tell whether the store is being written to steadily (Reached's
// `busy`), which decides what a read that stops short of the index's end means.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tubemq::consumer {

class StoreWatch {
 public:
  // A partition to fetch now: its key and the token of its use.
  using Wake = std::pair<std::string, uint64_t>;

  using Clock = std::chrono::steady_clock;

  // How long a store must have shown no growth to count as quiet again.
  static constexpr std::chrono::milliseconds kQuietStore{100};

  // The partition `key` (used under `token`) starts a short rest; the id names this rest
  // for Expire(). A rest begun again replaces the partition's earlier one.
  uint64_t Rest(const std::string& key, uint64_t token);

  // The rest's own timer ran out: true when the rest is still on (no sibling's reply
  // ended it), and it ends now. False: the partition was woken already.
  bool Expire(const std::string& key, uint64_t rest_id);

  // A reply for `key` at `now` says the index of its store reaches `max_offset`: the
  // resting siblings whose rest began when the index ended before that, each to fetch
  // now (their rests end here). Called with no lock of the caller's held: the caller
  // fetches them.
  //
  // `busy`, when given, is set to whether the store is being written to steadily: it
  // has grown with no quiet spell for at least kSteadyWrites, the last time within
  // kQuietStore. At a busy store a read that stops a few entries short of the index's
  // end is the usual answer at the end, a few entries behind the writes; after a quiet
  // spell (a burst of writes into a quiet topic) the entries left are there to read,
  // perhaps the partition's own.
  static constexpr std::chrono::milliseconds kSteadyWrites{20};
  std::vector<Wake> Reached(const std::string& key, int64_t max_offset,
                            Clock::time_point now = Clock::now(), bool* busy = nullptr);

 private:
  struct Resting {
    uint64_t token = 0;
    uint64_t id = 0;
    int64_t end_seen = -1;  // the store's end as known when the rest began; -1 unknown
  };
  struct Store {
    int64_t end = -1;  // the furthest end any reply showed
    std::optional<Clock::time_point> grew_at;  // when a reply last showed it further
    Clock::time_point growing_since{};         // the first growth after a quiet spell
    std::map<std::string, Resting> resting;
  };
  // The store of a partition key "brokerId:topic:partitionId": "brokerId:topic#store".
  static std::string StoreOf(const std::string& key);
  static constexpr int64_t kPartitionsPerStoreBase = 10000;

  std::mutex mutex_;  // held only for the moment of a lookup; nothing is called under it
  std::unordered_map<std::string, Store> stores_;
  uint64_t next_id_ = 0;
};

}  // namespace tubemq::consumer
