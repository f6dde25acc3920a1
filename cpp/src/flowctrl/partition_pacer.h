// How long a partition rests after each fetch (behaviour.md §6.5): the per-partition
// state of flow control (bytes this minute and this 5-second slice, the limit in force,
// consecutive empty fetches, the last known lag) and the delay each release gets.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

#include "flowctrl/flow_ctrl_rule_handler.h"

namespace tubemq::flowctrl {

struct FetchOutcome {
  int32_t code = 200;
  int64_t batch_bytes = 0;
  int32_t default_delay_ms = 0;  // the code's own delay (behaviour.md §3.8.1)
  int64_t lag = -1;              // currDataDlt of the reply; -1 when absent
  bool escaped = false;          // the reply's escFlowCtrl
  bool require_slow = false;
  int64_t processing_ms = 0;     // between the reply and this release (confirm), for 200
  // A 200 that brought nothing for this partition (only other partitions' entries of a
  // shared store) and read to the end of the index: "nothing new", as a 404 is, but
  // still a 200 for the byte limits. `default_delay_ms` is then 404's.
  bool nothing_new = false;
  // A 200 that read to the end of the index (within a few entries): the partition has
  // caught up with its store. With `messages`, the messages it brought.
  bool caught_up = false;
  int64_t messages = 0;
};

// The rest after `empty_fetches` consecutive fetches found nothing new, when no
// frequency rule says otherwise: kFirstEmptyRest after the first, doubling per empty
// fetch up to `ceiling_ms` (msg_not_found_wait_ms). A partition with data is fetched
// again at once, an idle one settles at the ceiling within about a dozen fetches. (No
// rest after the first empty fetch, as before, cost a fetch per message at a trickle of
// 250 messages a second per partition, about 6 % of a core, and gained 0.05 ms of median
// latency.) Why half a millisecond: at 1 000 msg/s over 4 partitions of one store, with
// a sibling's reply ending a rest early (consumer::StoreWatch), the median latency was
// 0.66 ms against 0.95 ms after a first rest of 1 ms, for 34-39 % of a core against
// 33-36 %; 250 us gained no more than noise for 42-46 %.
inline constexpr std::chrono::microseconds kFirstEmptyRest{500};
std::chrono::microseconds EmptyStreakWait(int32_t empty_fetches, int64_t ceiling_ms);

// The rest after a read that found only other partitions' entries (FetchOutcome::
// nothing_new), for a partition quiet for `quiet_ms`: none while it had data within
// kActiveWindowMs, else a quarter of its quiet time, up to `ceiling_ms`. (Counted as
// empty fetches instead, such reads at 1 000 msg/s over 4 partitions of one store
// halved the fetches but doubled the median latency, 1.2 -> 2.4 ms: the streak grew
// between a partition's own messages.)
inline constexpr int64_t kActiveWindowMs = 50;
inline constexpr int64_t kQuietWaitDivisor = 4;
int64_t QuietWait(int64_t quiet_ms, int64_t ceiling_ms);

// The rest after a batch that caught up with its store and brought at least
// kCaughtUpMessages messages, when DelayAfter() gave none: kCaughtUpRest, at most the
// `ceiling_ms` of msg_not_found_wait_ms; else none. Such a partition is busy, but a
// fetch at once would most likely come back empty: the rest is the first, sub-millisecond
// step of the back-off, taken before the empty fetch rather than after it. At 10 000
// msg/s over 4 partitions, fetching at once made 0.75 fetches per message and the broker
// used 74-76 % of a core (the latency-tuned Java client: 0.33, 64-66 %); resting 600 us,
// 0.30 and 58-64 %, with the median latency 0.2-0.4 ms higher and p99 no higher. A
// trickle (one message per batch) does not rest: there the next message is far off,
// and the fetch at once, whose empty reply starts the back-off, is what keeps it prompt
// (1 000 msg/s: p50 1.08 ms either way).
inline constexpr std::chrono::microseconds kCaughtUpRest{600};
inline constexpr int64_t kCaughtUpMessages = 2;
std::chrono::microseconds CaughtUpRest(const FetchOutcome& outcome, int64_t ceiling_ms);

// The rest after an empty fetch of a partition whose data has come at a steady pace:
// the empty streak's rest (EmptyStreakWait), but never more than a kProbesPerGap-th of
// the usual time between its data (kGapWeight), or a kQuietRestDivisor-th of how long it
// has been quiet, whichever is longer; and never under kShortestPacedRest. A partition
// whose messages come every 4 ms is probed every quarter of a millisecond while they
// come, not at 0.5, 1, 2, 4 ms after each (which left the median message waiting over a
// millisecond); one quiet for many of its usual gaps backs off by its quiet time, and
// one that never had a steady pace keeps the streak's doubling. (At 1 000 msg/s over 4
// partitions on a broker with its memory store, where an empty fetch is a 404 that
// carries no offsets for StoreWatch: median latency 0.75 ms against 1.35, p99 about 2 ms
// against 4, for 30 % of a core against 24 % and 23 % of the broker's against 19 %.
// Once the read path had become cheaper, the same workload beside the latency-tuned Java
// client (0.27-0.28 ms, p99 1.15-1.24, 64-65 % of a core, 29-30 % of the broker's), by
// probes per gap: 4, 0.68 ms, p99 1.53, for 28 % and 14 %; 8, 0.46 ms, 1.14, 32 % and
// 17 %; 16, 0.34 ms, 1.05, 44 % and 23 %. At 10 000 msg/s it changed nothing. Probing
// faster still, 32 per gap with a 125 us floor, gave 0.35 ms, p99 1.19, for 54 % and
// 27 % (tuned Java 0.27 ms beside it): past 16 the median no longer waits on probes.)
inline constexpr int64_t kProbesPerGap = 16;
inline constexpr int64_t kQuietRestDivisor = 8;
inline constexpr std::chrono::microseconds kShortestPacedRest{250};
std::chrono::microseconds PacedEmptyWait(int32_t empty_fetches, int64_t ceiling_ms,
                                         std::optional<std::chrono::microseconds> data_gap,
                                         std::chrono::microseconds quiet);

// When a rest taken on the I/O thread ends: `now + rest`, moved to the nearest multiple
// of kRestGrid since the clock's epoch, but never before `now` (so at most half a step
// early or late). Each rest's own timer woke the I/O thread once, and the fetch it sent
// woke it again with the reply: probing 4 partitions every quarter of a millisecond, as
// PacedEmptyWait does at 1 000 msg/s, was some 11 context switches per message, most of
// the consumer's CPU. Rests that end on one step of the grid fire in one wake-up, and
// their fetches leave together, so their replies tend to share one too. (Side by side at
// 1 000 msg/s over 4 partitions, 6 and 4 rounds: the C++ driver 40 % of a core against
// 43 %, broker 24 % against 25 %, median latency 0.37 ms against 0.38; the Python client
// 38.5-39.5 % against 41-42 %, 6.9 fetches and sends per message against 8.0, median
// 0.33 ms against 0.35. At 10 000 msg/s, a point less for client and broker.)
inline constexpr std::chrono::microseconds kRestGrid{125};
std::chrono::steady_clock::time_point RestEnd(std::chrono::steady_clock::time_point now,
                                              std::chrono::microseconds rest);

// The usual time between a partition's fetches that brought data: a moving average
// over the last few (weight kGapWeight for each new one), with a gap of more than
// kLongestDataGapMs (an idle spell, not a pace) capped there.
inline constexpr int64_t kGapWeight = 4;
inline constexpr int64_t kLongestDataGapMs = 1000;

class PartitionPacer {
 public:
  explicit PartitionPacer(bool filter_consumer) : filter_consumer_(filter_consumer) {}

  // The delay before the partition may be fetched again.
  std::chrono::microseconds DelayAfter(const FetchOutcome& outcome, const RuleSnapshot& rules,
                                       int64_t now_ms);

  int32_t empty_fetches() const { return empty_fetches_; }
  // How long the partition has been without data (as long as `now_ms` when it never had
  // any).
  int64_t QuietMs(int64_t now_ms) const { return std::max<int64_t>(0, now_ms - last_data_ms_); }

 private:
  void Refresh(const RuleSnapshot& rules, int64_t now_ms);

  const bool filter_consumer_;
  int64_t minute_bytes_ = 0;
  int64_t slice_bytes_ = 0;
  // As Refresh() sets them while no lag is known: effectively unlimited.
  int64_t limit_bytes_ = std::numeric_limits<int32_t>::max();
  int32_t limit_pause_ms_ = 20;
  LowFetchItem low_fetch_;
  int32_t empty_fetches_ = 0;
  int64_t last_lag_ = -1;
  int64_t last_data_ms_ = 0;  // when the partition last brought bytes; 0: never
  std::optional<std::chrono::microseconds> data_gap_;  // the usual time between data
  int64_t next_refresh_ms_ = 0;
  int64_t next_slice_ms_ = 0;
};

}  // namespace tubemq::flowctrl
