// What a producer sends, and what it learns once the broker has stored it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tubemq {

struct OutgoingMessage {
  std::string topic;
  std::string body;  // must not be empty
  // User attributes, "key=value" items; neither may contain ',' or '='.
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string msg_type;  // "$msgType$": the filter item consumers can select on
  std::string msg_time;  // "$msgTime$": exactly 12 digits, yyyyMMddHHmm
  // When set, the partition is chosen by a stable hash of the key instead of round robin.
  std::optional<std::string> key;
  // When set, the message goes to exactly this partition, "<brokerId>:<topic>:<partitionId>",
  // and nowhere else (retries included): the caller chose it, so moving it would be a lie.
  // A partition that is not writable at send time fails the send (kTopicNoPartition).
  std::optional<std::string> partition;
};

struct SendResult {
  std::string topic;
  std::string partition_key;  // "<brokerId>:<topic>:<partitionId>"
  int32_t partition_id = 0;
  std::string broker_address;
  int64_t message_id = -2;
  int64_t append_time = -2;    // broker receive time, epoch ms
  int64_t append_offset = -2;  // index position of the stored message
  int attempts = 1;            // sends made, retries included
};

}  // namespace tubemq
