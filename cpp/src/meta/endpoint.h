// A remote node's address, "host:port". Used as the key of the connection pool and
// parsed from user configuration (master list) and from master metadata (brokers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tubemq/status.h"

namespace tubemq::meta {

struct Endpoint {
  std::string host;
  uint16_t port = 0;

  std::string ToString() const { return host + ":" + std::to_string(port); }
  bool operator==(const Endpoint& other) const {
    return host == other.host && port == other.port;
  }
  bool operator<(const Endpoint& other) const {
    return host != other.host ? host < other.host : port < other.port;
  }
};

// Parses "host:port" (exactly one ':', non-blank host, port 1..65535).
Status ParseEndpoint(std::string_view text, Endpoint& out);

// Parses a master list "h1:p1,h2:p2,..."; blanks around entries are ignored,
// duplicates removed, order kept. An empty list is an error.
Status ParseEndpointList(std::string_view text, std::vector<Endpoint>& out);

}  // namespace tubemq::meta
