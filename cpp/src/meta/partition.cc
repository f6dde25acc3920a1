#include "meta/partition.h"

#include <cstdint>

#include "meta/text.h"

namespace tubemq::meta {
namespace {

// The partitions of `store_count` stores of `part_count` partitions each, or false
// when the counts are out of range (checked even for a broker the caller will skip).
bool ExpandStores(const BrokerInfo& broker, const std::string& topic, int64_t store_count,
                  int64_t part_count, std::vector<Partition>& out) {
  // store_count is bounded before the product, which could otherwise overflow (found
  // by the fuzzer: "1:4:8797299535549067721" wrapped past the bound).
  if (part_count < 0 || store_count < 0 || part_count > kStoreIdBase ||
      store_count > kMaxPartitionsPerBroker ||
      store_count * part_count > kMaxPartitionsPerBroker) {
    return false;
  }
  for (int64_t store = 0; store < store_count; ++store) {
    for (int64_t index = 0; index < part_count; ++index) {
      Partition partition;
      partition.broker = broker;
      partition.topic = topic;
      partition.id = static_cast<int32_t>(store * kStoreIdBase + index);
      out.push_back(std::move(partition));
    }
  }
  return true;
}

bool ParseBrokerId(std::string_view text, int64_t& id) {
  return ParseInt(Trim(text), id) && id >= 0 && id <= INT32_MAX;
}

Status Malformed(const char* what, std::string_view text, const char* why) {
  return Status(ErrorCode::kProtocolError,
                std::string(what) + " '" + std::string(text) + "' is malformed: " + why);
}

}  // namespace

Status ParseProducerTopicInfo(std::string_view text, const BrokerMap& brokers,
                              TopicPartitions& out) {
  const std::vector<std::string_view> segments = Split(Trim(text), '#');
  if (segments.size() < 2 || segments.size() > 3) {
    return Malformed("topic info", text, "expected topic#brokers[#size]");
  }
  out.topic = std::string(Trim(segments[0]));
  if (out.topic.empty()) return Malformed("topic info", text, "blank topic");
  out.partitions.clear();
  out.max_message_size = 0;
  if (segments.size() == 3 && !Trim(segments[2]).empty()) {
    int64_t size = 0;
    if (!ParseInt(Trim(segments[2]), size) || size <= 0) {
      return Malformed("topic info", text, "bad max message size");
    }
    out.max_message_size = size;
  }
  for (std::string_view item : Split(segments[1], ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    const std::vector<std::string_view> fields = Split(item, ':');
    int64_t broker_id = 0;
    int64_t part_count = 0;
    int64_t store_count = 0;
    if (fields.size() != 3 || !ParseBrokerId(fields[0], broker_id) ||
        !ParseInt(Trim(fields[1]), part_count) || !ParseInt(Trim(fields[2]), store_count)) {
      return Malformed("topic info", text, "expected brokerId:partNum:storeNum items");
    }
    const auto broker = brokers.find(static_cast<int32_t>(broker_id));
    std::vector<Partition> expanded;
    if (!ExpandStores(broker == brokers.end() ? BrokerInfo{} : broker->second, out.topic,
                      store_count, part_count, expanded)) {
      return Malformed("topic info", text, "partition or store count out of range");
    }
    if (broker == brokers.end()) continue;
    for (auto& partition : expanded) out.partitions.push_back(std::move(partition));
  }
  return Status::OK();
}

Status ParseConsumerTopicMeta(std::string_view text, const BrokerMap& brokers,
                              std::vector<SubscribablePartition>& out) {
  const std::vector<std::string_view> segments = Split(Trim(text), '#');
  if (segments.size() != 2) return Malformed("topic metadata", text, "expected topic#items");
  const std::string topic(Trim(segments[0]));
  if (topic.empty()) return Malformed("topic metadata", text, "blank topic");
  std::vector<SubscribablePartition> parsed;
  for (std::string_view item : Split(segments[1], ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    const std::vector<std::string_view> fields = Split(item, ':');
    int64_t broker_id = 0;
    int64_t store_count = 0;
    int64_t part_count = 0;
    int64_t status = 0;
    if (fields.size() != 4 || !ParseBrokerId(fields[0], broker_id) ||
        !ParseInt(Trim(fields[1]), store_count) || !ParseInt(Trim(fields[2]), part_count) ||
        !ParseInt(Trim(fields[3]), status)) {
      return Malformed("topic metadata", text, "expected brokerId:storeNum:partNum:statusId items");
    }
    const auto broker = brokers.find(static_cast<int32_t>(broker_id));
    std::vector<Partition> expanded;
    if (!ExpandStores(broker == brokers.end() ? BrokerInfo{} : broker->second, topic, store_count,
                      part_count, expanded)) {
      return Malformed("topic metadata", text, "partition or store count out of range");
    }
    if (broker == brokers.end()) continue;
    for (auto& partition : expanded) parsed.push_back({std::move(partition), status == 1});
  }
  for (auto& meta : parsed) out.push_back(std::move(meta));
  return Status::OK();
}

}  // namespace tubemq::meta
