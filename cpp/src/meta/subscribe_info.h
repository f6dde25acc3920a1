// Partition strings of the consumer protocol (protocol.md §5.3, §5.5, §5.7): the full
// string "<brokerId>:<host>:<port>#<topic>:<partitionId>" and the subscribe info
// "<consumerId>@<group>#<brokerId>:<host>:<port>#<topic>:<partitionId>" that reports and
// rebalance events carry.
#pragma once

#include <string>
#include <string_view>

#include "meta/partition.h"
#include "tubemq/status.h"

namespace tubemq::meta {

std::string PartitionFullString(const Partition& partition);
Status ParsePartitionFullString(std::string_view text, Partition& out);

struct SubscribeInfo {
  std::string consumer_id;
  std::string group;
  Partition partition;
};

std::string FormatSubscribeInfo(const SubscribeInfo& info);
Status ParseSubscribeInfo(std::string_view text, SubscribeInfo& out);

// "<errCode>:<full string>" of a broker heartbeat's failureInfo.
Status ParsePartitionFailure(std::string_view text, int32_t& code, Partition& out);

}  // namespace tubemq::meta
