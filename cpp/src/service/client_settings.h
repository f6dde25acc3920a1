// What every client's public shell shares: checking the common settings, the state kept
// on the application's side (settings verdict, creating process, service lease), and
// turning the core's completion callbacks into the futures the public API returns.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "meta/endpoint.h"
#include "net/tls_context.h"
#include "service/tubemq_service.h"
#include "tubemq/client_config.h"
#include "tubemq/status.h"

namespace tubemq::service {

// Checks the settings every client shares; fills in the master addresses and, when the
// config enables TLS, the client's TLS context (null otherwise).
Status ValidateClientConfig(const ClientConfig& config, std::vector<meta::Endpoint>& masters,
                            std::shared_ptr<net::TlsContext>& tls);

std::future<Status> ReadyFuture(Status status);

class ClientShell {
 public:
  explicit ClientShell(const char* kind);

  Status construction;  // why the settings were refused, if they were
  std::unique_ptr<ServiceLease> lease;

  // The construction error, or kForkedClient when used in a fork()ed child.
  Status Usable() const;
  bool InChild() const;
  // Gives the lease back (not in a child: the lease belongs to the parent).
  void Release();
  // In a child: keeps the parent's client alive and untouched for good, because its
  // timers and sockets belong to the parent's I/O engine.
  void AbandonInChild(std::shared_ptr<void> client);

  // Construction: checks the shared settings, then the client's own (`check_own()`, a
  // Status), and takes the service lease when both pass. False leaves the verdict in
  // `construction` for Usable() to report; the client then builds no core.
  template <typename CheckOwn>
  bool Admit(const ClientConfig& config, std::vector<meta::Endpoint>& masters,
             std::shared_ptr<net::TlsContext>& tls, CheckOwn&& check_own) {
    construction = ValidateClientConfig(config, masters, tls);
    if (construction.ok()) construction = check_own();
    if (!construction.ok()) return false;
    lease = std::make_unique<ServiceLease>();
    return true;
  }

  // Destruction: a best-effort `close()` (a future of Status) for an application that
  // did not close, waited for briefly, then the lease given back; in a fork()ed child
  // the client is abandoned instead. A client with no core (refused settings) has
  // nothing to do.
  template <typename CloseFn>
  void Retire(std::shared_ptr<void> client, CloseFn&& close) {
    if (!client) return;
    if (InChild()) {
      AbandonInChild(std::move(client));
      return;
    }
    close().wait_for(std::chrono::milliseconds(500));
    Release();
  }

 private:
  const char* kind_;
  int pid_;  // for the message only: InChild() compares fork generations
  uint64_t fork_generation_;
};

// A future and the callback that completes it.
std::pair<std::future<Status>, std::function<void(const Status&)>> MakeCompletion();

// The future of a client's asynchronous call: ready with `usable` when that is an
// error (the client cannot be used), else completed by the call `begin(done)` starts.
template <typename Begin>
std::future<Status> CallAsFuture(Status usable, Begin&& begin) {
  if (!usable.ok()) return ReadyFuture(std::move(usable));
  auto [future, done] = MakeCompletion();
  begin(std::move(done));
  return std::move(future);
}

// Close() of a client: a no-op for one whose settings were refused (it never started).
template <typename Begin>
std::future<Status> CloseAsFuture(Status usable, Begin&& begin) {
  if (usable.code() == ErrorCode::kInvalidArgument) return ReadyFuture(Status::OK());
  return CallAsFuture(std::move(usable), std::forward<Begin>(begin));
}

}  // namespace tubemq::service
