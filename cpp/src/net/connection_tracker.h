// ConnectionTracker: one client's view of the process-wide ConnectionPool. The pool
// is shared, so which client happens to replace a dead connection is luck; each client
// instead remembers the connection it last used per address and counts a reconnect
// when it is handed a new one because that one was lost (reset, refused, timed out,
// cut by a protocol error). Connections closed on purpose - idle recycling, a master
// that stopped being active - are replaced without counting.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "net/connection_pool.h"

namespace tubemq::net {

class ConnectionTracker {
 public:
  // `tls`: the client's TLS settings, or null for plain TCP.
  explicit ConnectionTracker(ConnectionPool& pool, std::shared_ptr<TlsContext> tls = nullptr)
      : pool_(pool), tls_(std::move(tls)) {}

  // The pool's connection to `endpoint`, noting whether it replaced a lost one.
  std::shared_ptr<ClientConnection> Get(const meta::Endpoint& endpoint);

  uint64_t reconnects() const { return reconnects_.load(std::memory_order_relaxed); }

 private:
  ConnectionPool& pool_;
  const std::shared_ptr<TlsContext> tls_;
  std::mutex mutex_;
  // Last connection handed out per address; kept alive (closed ones hold no socket)
  // so that "same connection" is an identity test, never a reused address.
  std::map<std::string, std::shared_ptr<ClientConnection>> last_used_;
  std::atomic<uint64_t> reconnects_{0};
};

}  // namespace tubemq::net
