#include "flowctrl/flow_ctrl_rules.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <string>

#include "meta/text.h"

namespace tubemq::flowctrl {
namespace {

Status Invalid(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "flow-control rule: " + what);
}

// "HH:MM" with H 0..24 and M 0..59 -> H*100+M.
bool ParseTime(const rapidjson::Value& value, int& out) {
  if (!value.IsString()) return false;
  const std::string_view text(value.GetString(), value.GetStringLength());
  const auto parts = meta::Split(text, ':');
  int64_t hour = 0;
  int64_t minute = 0;
  if (parts.size() != 2 || !meta::ParseInt(parts[0], hour) || !meta::ParseInt(parts[1], minute) ||
      hour < 0 || hour > 24 || minute < 0 || minute > 59) {
    return false;
  }
  out = static_cast<int>(hour * 100 + minute);
  return true;
}

bool GetInt(const rapidjson::Value& item, const char* name, int64_t& out) {
  const auto found = item.FindMember(name);
  if (found == item.MemberEnd() || !found->value.IsInt64()) return false;
  out = found->value.GetInt64();
  return true;
}

// An absent low-fetch field counts as 0 (behaviour.md §6.2).
bool GetOptionalInt(const rapidjson::Value& item, const char* name, int64_t& out) {
  if (!item.HasMember(name)) {
    out = 0;
    return true;
  }
  return GetInt(item, name, out);
}

}  // namespace

int Gmt8TimeOfDay(int64_t epoch_ms) {
  const int64_t minutes = (epoch_ms / 60000 + 8 * 60) % (24 * 60);
  return static_cast<int>(minutes / 60 * 100 + minutes % 60);
}

Status FlowCtrlRules::Parse(std::string_view json, FlowCtrlRules& out) {
  out = FlowCtrlRules();
  if (meta::Trim(json).empty()) return Status::OK();
  rapidjson::Document document;
  document.Parse(json.data(), json.size());
  if (document.HasParseError() || !document.IsArray()) return Invalid("not a JSON array");
  FlowCtrlRules rules;
  for (const auto& record : document.GetArray()) {
    if (!record.IsObject() || !record.HasMember("type") || !record["type"].IsInt()) {
      return Invalid("a record has no integer 'type'");
    }
    const int type = record["type"].GetInt();
    if (type == 2) continue;  // deprecated SSD rule: skipped unread, as upstream does
    if (type < 0 || type > 3) return Invalid("unknown type " + std::to_string(type));
    if (!record.HasMember("rule") || !record["rule"].IsArray()) {
      return Invalid("type " + std::to_string(type) + " has no 'rule' array");
    }
    const auto& items = record["rule"].GetArray();
    // A later record of the same type replaces an earlier one.
    if (type == 0) {
      rules.data_limits_.clear();
      for (const auto& item : items) {
        DataLimitItem parsed;
        int64_t lag = 0, limit = 0, pause = 0;
        if (!item.IsObject() || !item.HasMember("start") || !item.HasMember("end") ||
            !ParseTime(item["start"], parsed.start) || !ParseTime(item["end"], parsed.end) ||
            parsed.start >= parsed.end) {
          return Invalid("data-limit item needs 'start' < 'end' as HH:MM");
        }
        if (!GetInt(item, "dltInM", lag) || lag <= 20 || !GetInt(item, "limitInM", limit) ||
            limit < 0 || !GetInt(item, "freqInMs", pause) || pause < 200) {
          return Invalid("data-limit item needs dltInM > 20, limitInM >= 0, freqInMs >= 200");
        }
        parsed.lag_threshold = lag;
        parsed.limit_mib = limit;
        parsed.pause_ms = static_cast<int32_t>(pause);
        rules.data_limits_.push_back(parsed);
      }
    } else if (type == 1) {
      rules.frequency_.clear();
      for (const auto& item : items) {
        int64_t zero_count = 0, pause = 0;
        if (!item.IsObject() || !GetInt(item, "zeroCnt", zero_count) || zero_count < 1 ||
            !GetInt(item, "freqInMs", pause) || pause < 0) {
          return Invalid("frequency item needs zeroCnt >= 1 and freqInMs >= 0");
        }
        rules.frequency_.push_back(
            FrequencyItem{static_cast<int32_t>(zero_count), static_cast<int32_t>(pause)});
      }
    } else {  // type 3
      if (items.Size() > 1) return Invalid("low-fetch rule has more than one item");
      LowFetchItem parsed{0, 0, 0};
      if (items.Size() == 1) {
        const auto& item = items[0];
        int64_t normal = 0, filter = 0, slow = 0;
        const bool has_filter = item.IsObject() && item.HasMember("filterFreqInMs");
        const bool has_slow = item.IsObject() && item.HasMember("minDataFilterFreqInMs");
        if (!item.IsObject() || !GetOptionalInt(item, "normFreqInMs", normal) ||
            !GetOptionalInt(item, "filterFreqInMs", filter) ||
            !GetOptionalInt(item, "minDataFilterFreqInMs", slow) || has_filter != has_slow ||
            normal < 0 || normal > 300000 || filter < 0 || filter > 300000 || slow < 0 ||
            slow > 300000 || slow < filter) {
          return Invalid("low-fetch item needs values in 0..300000, filter and "
                         "minDataFilter frequencies together, minDataFilter >= filter");
        }
        parsed = LowFetchItem{static_cast<int32_t>(normal), static_cast<int32_t>(filter),
                              static_cast<int32_t>(slow)};
      }
      rules.low_fetch_ = parsed;
    }
  }
  std::sort(rules.data_limits_.begin(), rules.data_limits_.end(),
            [](const DataLimitItem& a, const DataLimitItem& b) { return a.start < b.start; });
  std::sort(rules.frequency_.begin(), rules.frequency_.end(),
            [](const FrequencyItem& a, const FrequencyItem& b) {
              return a.zero_count > b.zero_count;
            });
  if (!rules.data_limits_.empty()) {
    rules.min_lag_threshold_ = rules.data_limits_.front().lag_threshold;
    rules.earliest_start_ = rules.data_limits_.front().start;
    rules.latest_end_ = rules.data_limits_.front().end;
    for (const auto& item : rules.data_limits_) {
      rules.min_lag_threshold_ = std::min(rules.min_lag_threshold_, item.lag_threshold);
      rules.latest_end_ = std::max(rules.latest_end_, item.end);
    }
  }
  out = std::move(rules);
  return Status::OK();
}

std::optional<DataLimit> FlowCtrlRules::DataLimitFor(int64_t lag, int time_of_day) const {
  if (data_limits_.empty() || lag < min_lag_threshold_ || time_of_day < earliest_start_ ||
      time_of_day > latest_end_) {
    return std::nullopt;
  }
  for (const auto& item : data_limits_) {
    if (lag > item.lag_threshold && time_of_day >= item.start && time_of_day <= item.end) {
      return DataLimit{item.limit_mib * 1024 * 1024, item.pause_ms};
    }
  }
  return std::nullopt;
}

int32_t FlowCtrlRules::FrequencyPause(int32_t empty_fetches, int32_t fallback_ms) const {
  if (frequency_.empty() || empty_fetches < frequency_.back().zero_count) return fallback_ms;
  for (const auto& item : frequency_) {
    if (empty_fetches >= item.zero_count) return item.pause_ms;
  }
  return fallback_ms;
}

}  // namespace tubemq::flowctrl
