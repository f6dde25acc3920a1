// Settings shared by every client. The Python facade validates user input against
// its schema before filling this in; the core re-checks only what it relies on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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
  bool tls_enable = false;          // TLS to the master's and brokers' TLS ports
  std::string tls_ca_file;          // PEM CA file; empty = the system's trust store
  bool tls_verify_hostname = true;  // the certificate must name the host dialled
  std::string tls_cert_file;        // PEM client certificate (two-way TLS); empty: none
  std::string tls_key_file;         // PEM private key of tls_cert_file
};

// "" when `masters` is a valid master list ("host:port[,host:port...]", blanks around
// entries ignored), else why not, naming the bad entry. The one parser of master lists:
// clients check their config with it, and the Python facade asks it too.
std::string MasterListProblem(std::string_view masters);

}  // namespace tubemq
