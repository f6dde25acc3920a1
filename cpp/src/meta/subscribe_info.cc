#include "meta/subscribe_info.h"

#include <cstdint>

#include "meta/text.h"

namespace tubemq::meta {
namespace {

Status Bad(std::string_view what, std::string_view text) {
  return Status(ErrorCode::kProtocolError,
                std::string(what) + " '" + std::string(text) + "' is malformed");
}

}  // namespace

std::string PartitionFullString(const Partition& partition) {
  return std::to_string(partition.broker.id) + ":" + partition.broker.endpoint.ToString() + "#" +
         partition.topic + ":" + std::to_string(partition.id);
}

Status ParsePartitionFullString(std::string_view text, Partition& out) {
  const auto halves = Split(text, '#');
  if (halves.size() != 2) return Bad("partition string", text);
  // The broker part has a numeric port here, unlike the master's broker list.
  const auto broker = Split(halves[0], ':');
  const auto topic = Split(halves[1], ':');
  int64_t broker_id = 0, port = 0, partition_id = 0;
  if (broker.size() != 3 || topic.size() != 2 || !ParseInt(broker[0], broker_id) ||
      Trim(broker[1]).empty() || !ParseInt(broker[2], port) || port < 1 || port > 65535 ||
      Trim(topic[0]).empty() || !ParseInt(topic[1], partition_id) || partition_id < 0 ||
      broker_id < 0 || broker_id > INT32_MAX || partition_id > INT32_MAX) {
    return Bad("partition string", text);
  }
  out.broker.id = static_cast<int32_t>(broker_id);
  out.broker.endpoint = meta::Endpoint{std::string(Trim(broker[1])), static_cast<uint16_t>(port)};
  out.topic = std::string(Trim(topic[0]));
  out.id = static_cast<int32_t>(partition_id);
  return Status::OK();
}

std::string FormatSubscribeInfo(const SubscribeInfo& info) {
  return info.consumer_id + "@" + info.group + "#" + PartitionFullString(info.partition);
}

Status ParseSubscribeInfo(std::string_view text, SubscribeInfo& out) {
  const size_t hash = text.find('#');
  if (hash == std::string_view::npos) return Bad("subscribe info", text);
  const std::string_view owner = text.substr(0, hash);
  const size_t at = owner.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == owner.size()) {
    return Bad("subscribe info", text);
  }
  Status status = ParsePartitionFullString(text.substr(hash + 1), out.partition);
  if (!status.ok()) return Bad("subscribe info", text);
  out.consumer_id = std::string(owner.substr(0, at));
  out.group = std::string(owner.substr(at + 1));
  return Status::OK();
}

Status ParsePartitionFailure(std::string_view text, int32_t& code, Partition& out) {
  const size_t colon = text.find(':');
  int64_t parsed = 0;
  if (colon == std::string_view::npos || !ParseInt(text.substr(0, colon), parsed)) {
    return Bad("partition failure", text);
  }
  code = static_cast<int32_t>(parsed);
  return ParsePartitionFullString(text.substr(colon + 1), out);
}

}  // namespace tubemq::meta
