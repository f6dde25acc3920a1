// ConnectionPool: the process's connections, one per remote "host:port" (and TLS trust
// settings, for TLS connections), shared by every client of the process. Closed connections are replaced on the next Get();
// connections idle for too long are recycled by a periodic sweep.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "net/client_connection.h"

namespace tubemq::net {

class ConnectionPool {
 public:
  ConnectionPool(asio::io_context& io, ConnectionOptions options) : io_(io), options_(options) {}

  // The open (or opening) connection to `endpoint`, created if needed; over TLS with
  // `tls`.
  std::shared_ptr<ClientConnection> Get(const meta::Endpoint& endpoint,
                                        const std::shared_ptr<TlsContext>& tls = nullptr);

  // Closes connections with nothing pending and no traffic for `idle`. Returns how
  // many were closed.
  size_t CloseIdle(std::chrono::milliseconds idle);

  void CloseAll(const Status& reason);
  size_t size() const;

 private:
  asio::io_context& io_;
  const ConnectionOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<ClientConnection>> connections_;
};

}  // namespace tubemq::net
