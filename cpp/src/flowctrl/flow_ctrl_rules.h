// One set of flow-control rules (behaviour.md §6.2-6.3), as the master sends it: a JSON
// array of {"type": t, "rule": [items]} records. Parsing validates every item; the
// evaluation functions answer "how fast may this partition be fetched now".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tubemq/status.h"

namespace tubemq::flowctrl {

// Times of day are H*100+M in GMT+8 (18:30 -> 1830), as the master's rules mean them.
int Gmt8TimeOfDay(int64_t epoch_ms);

struct DataLimitItem {  // type 0
  int start = 0;        // H*100+M
  int end = 0;
  int64_t lag_threshold = 0;  // "dltInM", compared with the byte lag as the broker does
  int64_t limit_mib = 0;      // budget per minute
  int32_t pause_ms = 0;       // "freqInMs": delay once over budget
};

struct FrequencyItem {  // type 1
  int32_t zero_count = 0;
  int32_t pause_ms = 0;
};

struct LowFetchItem {  // type 3; -2 = no such rule
  int32_t normal_ms = -2;
  int32_t filter_ms = -2;
  int32_t slow_filter_ms = -2;
};

struct DataLimit {
  int64_t bytes_per_minute = 0;
  int32_t pause_ms = 0;
};

class FlowCtrlRules {
 public:
  // Blank or "[]" is an empty set. Any invalid record rejects the whole text.
  static Status Parse(std::string_view json, FlowCtrlRules& out);

  // The limit in force for a partition `lag` bytes behind, at GMT+8 time `time_of_day`.
  std::optional<DataLimit> DataLimitFor(int64_t lag, int time_of_day) const;
  // The pause after `empty_fetches` consecutive empty fetches, else `fallback_ms`.
  int32_t FrequencyPause(int32_t empty_fetches, int32_t fallback_ms) const;

  bool has_frequency_rules() const { return !frequency_.empty(); }
  bool has_low_fetch_rule() const { return low_fetch_.normal_ms >= 0; }
  const LowFetchItem& low_fetch() const { return low_fetch_; }
  bool empty() const {
    return data_limits_.empty() && frequency_.empty() && !has_low_fetch_rule();
  }

 private:
  std::vector<DataLimitItem> data_limits_;  // by start time
  std::vector<FrequencyItem> frequency_;    // by zero_count, largest first
  LowFetchItem low_fetch_;
  int64_t min_lag_threshold_ = 0;
  int earliest_start_ = 0;
  int latest_end_ = 0;
};

}  // namespace tubemq::flowctrl
