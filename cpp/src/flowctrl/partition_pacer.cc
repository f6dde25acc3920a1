#include "flowctrl/partition_pacer.h"

#include <algorithm>
#include <limits>

namespace tubemq::flowctrl {
namespace {

// Delays are kept in microseconds; the rules and codes give whole milliseconds, which
// convert on return.
using std::chrono::milliseconds;

constexpr int64_t kRefreshPeriodMs = 60000;
constexpr int64_t kSlicePeriodMs = 5000;
constexpr int64_t kSlicesPerMinute = 12;

}  // namespace

std::chrono::microseconds EmptyStreakWait(int32_t empty_fetches, int64_t ceiling_ms) {
  if (empty_fetches <= 0) return std::chrono::microseconds(0);
  // 0.5, 1, 2, ... ms: the shift stops growing long before it could overflow.
  const int shift = std::min(empty_fetches - 1, 30);
  return std::min<std::chrono::microseconds>(kFirstEmptyRest * (int64_t{1} << shift),
                                             std::chrono::milliseconds(ceiling_ms));
}

std::chrono::microseconds PacedEmptyWait(int32_t empty_fetches, int64_t ceiling_ms,
                                         std::optional<std::chrono::microseconds> data_gap,
                                         std::chrono::microseconds quiet) {
  // The streak's rest is already within the ceiling, and so is the shorter of the two.
  const std::chrono::microseconds streak = EmptyStreakWait(empty_fetches, ceiling_ms);
  if (!data_gap) return streak;
  return std::min(streak, std::max({*data_gap / kProbesPerGap, quiet / kQuietRestDivisor,
                                    kShortestPacedRest}));
}

std::chrono::steady_clock::time_point RestEnd(std::chrono::steady_clock::time_point now,
                                              std::chrono::microseconds rest) {
  using std::chrono::steady_clock;
  const auto step = std::chrono::duration_cast<steady_clock::duration>(kRestGrid);
  const steady_clock::duration due = (now + rest).time_since_epoch();
  const steady_clock::duration nearest = (due + step / 2) / step * step;
  return std::max(now, steady_clock::time_point(nearest));
}

std::chrono::microseconds CaughtUpRest(const FetchOutcome& outcome, int64_t ceiling_ms) {
  const bool busy_and_caught_up = outcome.code == 200 && !outcome.escaped &&
                                  !outcome.nothing_new && outcome.caught_up &&
                                  outcome.messages >= kCaughtUpMessages;
  if (!busy_and_caught_up) return std::chrono::microseconds(0);
  return std::min<std::chrono::microseconds>(kCaughtUpRest, std::chrono::milliseconds(ceiling_ms));
}

int64_t QuietWait(int64_t quiet_ms, int64_t ceiling_ms) {
  if (quiet_ms < kActiveWindowMs) return 0;
  return std::min(quiet_ms / kQuietWaitDivisor, ceiling_ms);
}

void PartitionPacer::Refresh(const RuleSnapshot& rules, int64_t now_ms) {
  minute_bytes_ = 0;
  slice_bytes_ = 0;
  if (last_lag_ < 0) {
    // Nothing known about the backlog yet: effectively unlimited.
    limit_bytes_ = std::numeric_limits<int32_t>::max();
    limit_pause_ms_ = 20;
  } else {
    const int time_of_day = Gmt8TimeOfDay(now_ms);
    std::optional<DataLimit> limit = rules.group->DataLimitFor(last_lag_, time_of_day);
    if (!limit) limit = rules.cluster_default->DataLimitFor(last_lag_, time_of_day);
    limit_bytes_ = limit ? limit->bytes_per_minute : std::numeric_limits<int64_t>::max();
    limit_pause_ms_ = limit ? limit->pause_ms : 0;
    low_fetch_ = rules.group->has_low_fetch_rule() ? rules.group->low_fetch()
                                                   : rules.cluster_default->low_fetch();
  }
  next_refresh_ms_ = now_ms + kRefreshPeriodMs;
  next_slice_ms_ = now_ms + kSlicePeriodMs;
}

std::chrono::microseconds PartitionPacer::DelayAfter(const FetchOutcome& outcome,
                                                     const RuleSnapshot& rules, int64_t now_ms) {
  if (outcome.lag >= 0) last_lag_ = outcome.lag;
  // Windows roll over before the batch is counted, so the batch that opens a window
  // counts in it (upstream drops it; pacing is local, either is allowed).
  if (now_ms > next_refresh_ms_) {
    Refresh(rules, now_ms);
  } else if (now_ms > next_slice_ms_) {
    slice_bytes_ = 0;
    next_slice_ms_ = now_ms + kSlicePeriodMs;
  }
  minute_bytes_ += outcome.batch_bytes;
  slice_bytes_ += outcome.batch_bytes;

  const int64_t fallback = outcome.default_delay_ms;
  if (outcome.code != 200 && outcome.code != 404) return milliseconds(fallback);

  const FlowCtrlRules& source =
      rules.group->has_frequency_rules() ? *rules.group : *rules.cluster_default;
  const int64_t slice_budget = limit_bytes_ / kSlicesPerMinute;
  const bool over_limit = minute_bytes_ >= limit_bytes_ || slice_bytes_ >= slice_budget;
  if (outcome.nothing_new) {
    // Still a 200 for escFlowCtrl and the byte limits. Otherwise the partition steps on
    // through its neighbours' entries, one read per few of them at the end of a busy
    // store. While it is active (data within kActiveWindowMs) that goes on at once, as
    // after data, so its own next message is not kept waiting behind them; a quiet
    // partition rests by how long it has been quiet, and backs off to the ceiling even
    // while its neighbours are busy. An operator's frequency rules count such a read as
    // an empty fetch.
    if (outcome.escaped) return milliseconds(0);
    if (over_limit) return milliseconds(std::max<int64_t>(limit_pause_ms_, fallback));
    if (source.has_frequency_rules()) {
      return milliseconds(source.FrequencyPause(++empty_fetches_, static_cast<int32_t>(fallback)));
    }
    const int64_t wait = QuietWait(QuietMs(now_ms), fallback);
    if (wait == 0) empty_fetches_ = 0;  // active: as after data
    return milliseconds(wait);
  }
  if (outcome.batch_bytes > 0) {
    if (last_data_ms_ > 0) {
      const std::chrono::microseconds gap =
          milliseconds(std::clamp<int64_t>(now_ms - last_data_ms_, 0, kLongestDataGapMs));
      data_gap_ = data_gap_ ? *data_gap_ + (gap - *data_gap_) / kGapWeight : gap;
    }
    last_data_ms_ = now_ms;
  }
  empty_fetches_ = outcome.batch_bytes == 0 && outcome.code != 200 ? empty_fetches_ + 1 : 0;
  if (empty_fetches_ > 0) {
    // An operator's frequency rules are obeyed as written, with the full wait between
    // them; without any, the wait grows with the empty streak up to that ceiling.
    // (Only a 404 gets here: other codes returned above, and a 200 ends the streak.)
    if (source.has_frequency_rules()) {
      return milliseconds(source.FrequencyPause(empty_fetches_, static_cast<int32_t>(fallback)));
    }
    return PacedEmptyWait(empty_fetches_, fallback, data_gap_,
                          milliseconds(QuietMs(now_ms)));
  }
  if (outcome.escaped) return milliseconds(0);
  if (over_limit) return milliseconds(std::max<int64_t>(limit_pause_ms_, fallback));
  if (outcome.code == 200) {
    int64_t pace = -1;
    if (filter_consumer_ && low_fetch_.filter_ms >= 0) {
      pace = outcome.require_slow ? low_fetch_.slow_filter_ms : low_fetch_.filter_ms;
    } else if (!filter_consumer_ && low_fetch_.normal_ms >= 0) {
      pace = low_fetch_.normal_ms;
    }
    if (pace >= 0) return milliseconds(std::max<int64_t>(0, pace - outcome.processing_ms));
  }
  return milliseconds(fallback);
}

}  // namespace tubemq::flowctrl
