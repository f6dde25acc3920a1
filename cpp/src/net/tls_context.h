// TlsContext: how one client's connections speak TLS (behaviour.md §1.4). One OpenSSL
// context per client, with the CA file loaded once, shared by every connection the
// client opens; the server's certificate is always verified (against the CA file, or
// the system's store when none is named), its host name too unless switched off. With a
// certificate and key, the client proves itself too (two-way TLS, which 2.4.0 servers
// require of every TLS client).
#pragma once

#include <asio/ssl.hpp>
#include <memory>
#include <string>

#include "tubemq/client_config.h"
#include "tubemq/status.h"

namespace tubemq::net {

class TlsContext {
 public:
  // Null `out` when the config does not enable TLS; kInvalidArgument naming the setting
  // when the CA file cannot be used.
  static Status FromConfig(const ClientConfig& config, std::shared_ptr<TlsContext>& out);

  asio::ssl::context& ssl() { return context_; }
  bool verify_hostname() const { return verify_hostname_; }
  // Tells connections made with different trust settings apart in the shared pool.
  const std::string& pool_key() const { return pool_key_; }

  explicit TlsContext(bool verify_hostname, std::string pool_key);

 private:
  asio::ssl::context context_;
  const bool verify_hostname_;
  const std::string pool_key_;
};

}  // namespace tubemq::net
