#include "net/connection_pool.h"

#include <vector>

#include "log/log.h"

namespace tubemq::net {

std::shared_ptr<ClientConnection> ConnectionPool::Get(const meta::Endpoint& endpoint,
                                                      const std::shared_ptr<TlsContext>& tls) {
  const std::string key = tls ? tls->pool_key() + "@" + endpoint.ToString() : endpoint.ToString();
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = connections_[key];
  if (!slot || slot->closed()) slot = ClientConnection::Create(io_, endpoint, options_, tls);
  return slot;
}

size_t ConnectionPool::CloseIdle(std::chrono::milliseconds idle) {
  const auto cutoff = ClientConnection::Clock::now() - idle;
  std::vector<std::shared_ptr<ClientConnection>> victims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      const auto& connection = it->second;
      if (connection->closed()) {
        it = connections_.erase(it);
      } else if (connection->pending_count() == 0 && connection->last_activity() < cutoff) {
        victims.push_back(connection);
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Closing outside the lock: Close() only posts to the connection's strand, but
  // keeping lock scopes free of foreign calls is the rule everywhere.
  for (const auto& connection : victims) {
    TUBEMQ_LOG_DEBUG("recycling idle connection to " << connection->endpoint().ToString());
    connection->Close(Status(ErrorCode::kConnectionClosed, "idle connection recycled"));
  }
  return victims.size();
}

void ConnectionPool::CloseAll(const Status& reason) {
  std::map<std::string, std::shared_ptr<ClientConnection>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all.swap(connections_);
  }
  for (auto& entry : all) entry.second->Close(reason);
}

size_t ConnectionPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return connections_.size();
}

}  // namespace tubemq::net
