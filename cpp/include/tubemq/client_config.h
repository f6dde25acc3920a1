// Settings shared by every client. The Python facade validates user input against
// its schema before filling this in; the core re-checks only what it relies on.
#pragma once

#include <cstdint>
#include <string>

namespace tubemq {

struct ClientConfig {
  std::string masters;                  // "host:port[,host:port...]"
  int64_t rpc_timeout_ms = 10000;       // deadline of each request
  int64_t connect_timeout_ms = 3000;    // deadline of each TCP connect
  int64_t heartbeat_period_ms = 10000;  // to the master
  int32_t register_attempts = 5;        // rounds over the master list at start
  int64_t register_retry_wait_ms = 1000;
  std::string local_host;               // reported to servers; empty = auto-detect
  std::string auth_user;                // empty: no authentication (protocol.md §8)
  std::string auth_password;
};

}  // namespace tubemq
