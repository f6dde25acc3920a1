// Partitions (protocol.md §5.3). A topic on a broker has `storeNum` stores of
// `partNum` partitions each; partition ids are storeIndex * 10000 + index. Everywhere
// in the client a partition is known by its key "<brokerId>:<topic>:<partitionId>".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "meta/broker_info.h"
#include "tubemq/status.h"

namespace tubemq::meta {

inline constexpr int32_t kStoreIdBase = 10000;
inline constexpr int64_t kDefaultMaxMessageSize = 1024 * 1024;

struct Partition {
  BrokerInfo broker;
  std::string topic;
  int32_t id = 0;

  std::string Key() const {
    return std::to_string(broker.id) + ":" + topic + ":" + std::to_string(id);
  }
};

// What a producer heartbeat says of one published topic (protocol.md §5.4):
// "<topic>#<brokerId>:<partNum>:<storeNum>[,...]#<maxMsgSizeInBytes>".
struct TopicPartitions {
  std::string topic;
  std::vector<Partition> partitions;
  int64_t max_message_size = 0;  // 0 = the default
};

// Expands one topic info string against the broker map; brokers the map does not
// know are skipped, as the master may list a broker the client has not heard of yet.
Status ParseProducerTopicInfo(std::string_view text, const BrokerMap& brokers,
                              TopicPartitions& out);

// One partition of a client-balanced consumer's topic metadata.
struct SubscribablePartition {
  Partition partition;
  bool subscribable = false;
};

// What the master tells a client-balanced consumer of one topic (protocol.md §5.8):
// "<topic>#<brokerId>:<storeNum>:<partNum>:<statusId>[,...]" (storeNum first, unlike
// the producer's format). Appends to `out`; unknown brokers are skipped.
Status ParseConsumerTopicMeta(std::string_view text, const BrokerMap& brokers,
                              std::vector<SubscribablePartition>& out);

// The most partitions one broker may declare for one topic: a guard against a corrupt
// count making the client allocate millions of entries.
inline constexpr int64_t kMaxPartitionsPerBroker = 10000;

}  // namespace tubemq::meta
