#include "meta/partition.h"

#include <cstdint>

#include "meta/text.h"

namespace tubemq::meta {

Status ParseProducerTopicInfo(std::string_view text, const BrokerMap& brokers,
                              TopicPartitions& out) {
  const auto bad = [&](const char* why) {
    return Status(ErrorCode::kProtocolError,
                  "topic info '" + std::string(text) + "' is malformed: " + why);
  };
  const std::vector<std::string_view> segments = Split(Trim(text), '#');
  if (segments.size() < 2 || segments.size() > 3) return bad("expected topic#brokers[#size]");
  out.topic = std::string(Trim(segments[0]));
  if (out.topic.empty()) return bad("blank topic");
  out.partitions.clear();
  out.max_message_size = 0;
  if (segments.size() == 3 && !Trim(segments[2]).empty()) {
    int64_t size = 0;
    if (!ParseInt(Trim(segments[2]), size) || size <= 0) return bad("bad max message size");
    out.max_message_size = size;
  }
  for (std::string_view item : Split(segments[1], ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    const std::vector<std::string_view> fields = Split(item, ':');
    int64_t broker_id = 0;
    int64_t part_count = 0;
    int64_t store_count = 0;
    if (fields.size() != 3 || !ParseInt(Trim(fields[0]), broker_id) ||
        !ParseInt(Trim(fields[1]), part_count) || !ParseInt(Trim(fields[2]), store_count) ||
        broker_id < 0 || broker_id > INT32_MAX || part_count < 0 || store_count < 0 ||
        part_count > kStoreIdBase || store_count > 1000) {
      return bad("expected brokerId:partNum:storeNum items");
    }
    const auto broker = brokers.find(static_cast<int32_t>(broker_id));
    if (broker == brokers.end()) continue;
    for (int64_t store = 0; store < store_count; ++store) {
      for (int64_t index = 0; index < part_count; ++index) {
        Partition partition;
        partition.broker = broker->second;
        partition.topic = out.topic;
        partition.id = static_cast<int32_t>(store * kStoreIdBase + index);
        out.partitions.push_back(std::move(partition));
      }
    }
  }
  return Status::OK();
}

}  // namespace tubemq::meta
