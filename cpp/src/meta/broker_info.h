// Brokers as the master describes them (protocol.md §5.2): "<brokerId>:<host>:<port>",
// where the port may be a single blank meaning "the default port", which is 8123 on a
// plain connection to the master and 8124 when the client talks TLS to the master.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "meta/endpoint.h"
#include "tubemq/status.h"

namespace tubemq::meta {

inline constexpr uint16_t kDefaultBrokerPort = 8123;
inline constexpr uint16_t kDefaultBrokerTlsPort = 8124;

struct BrokerInfo {
  int32_t id = 0;
  meta::Endpoint endpoint;
};

Status ParseBrokerInfo(std::string_view text, bool tls, BrokerInfo& out);

// Broker id -> broker. Bad entries are skipped and reported through `first_error`.
using BrokerMap = std::map<int32_t, BrokerInfo>;
BrokerMap ParseBrokerList(const std::vector<std::string>& items, bool tls, Status* first_error);

}  // namespace tubemq::meta
