#include "net/connection_tracker.h"

namespace tubemq::net {

std::shared_ptr<ClientConnection> ConnectionTracker::Get(const meta::Endpoint& endpoint) {
  auto connection = pool_.Get(endpoint, tls_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& previous = last_used_[endpoint.ToString()];
  if (previous && previous != connection && previous->lost()) {
    reconnects_.fetch_add(1, std::memory_order_relaxed);
  }
  previous = connection;
  return connection;
}

}  // namespace tubemq::net
