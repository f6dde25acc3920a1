#include "service/client_settings.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace tubemq {

std::string MasterListProblem(std::string_view masters) {
  std::vector<meta::Endpoint> parsed;
  const Status status = meta::ParseEndpointList(masters, parsed);
  return status.ok() ? std::string() : status.message();
}

}  // namespace tubemq

namespace tubemq::service {
namespace {

// Every send asks whether the client was created before a fork(). getpid() answered
// that with a system call each time (glibc no longer caches the pid); a counter that
// an atfork handler bumps in the child answers it with a load.
std::atomic<uint64_t> g_fork_generation{0};

void CountFork() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

uint64_t ForkGeneration() {
  // Registered before the first client exists, so no fork after it goes unseen.
  static const bool registered = pthread_atfork(nullptr, nullptr, &CountFork) == 0;
  (void)registered;
  return g_fork_generation.load(std::memory_order_relaxed);
}

}  // namespace

Status ValidateClientConfig(const ClientConfig& config, std::vector<meta::Endpoint>& masters,
                            std::shared_ptr<net::TlsContext>& tls) {
  Status status = meta::ParseEndpointList(config.masters, masters);
  if (!status.ok()) return status;
  const auto positive = [](int64_t value, const char* name) {
    return value > 0 ? Status::OK()
                     : Status(ErrorCode::kInvalidArgument,
                              std::string(name) + " must be positive, got " +
                                  std::to_string(value));
  };
  for (const Status& check :
       {positive(config.rpc_timeout_ms, "rpc_timeout_ms"),
        positive(config.connect_timeout_ms, "connect_timeout_ms"),
        positive(config.heartbeat_period_ms, "heartbeat_period_ms"),
        positive(config.register_attempts, "register_attempts"),
        positive(config.register_retry_wait_ms, "register_retry_wait_ms")}) {
    if (!check.ok()) return check;
  }
  return net::TlsContext::FromConfig(config, tls);
}

std::future<Status> ReadyFuture(Status status) {
  std::promise<Status> promise;
  promise.set_value(std::move(status));
  return promise.get_future();
}

ClientShell::ClientShell(const char* kind)
    : kind_(kind), pid_(getpid()), fork_generation_(ForkGeneration()) {}

Status ClientShell::Usable() const {
  if (!construction.ok()) return construction;
  if (InChild()) {
    return Status(ErrorCode::kForkedClient,
                  std::string("this ") + kind_ + " was created in process " +
                      std::to_string(pid_) + " before fork(); create a new client in the child "
                      "process");
  }
  return Status::OK();
}

bool ClientShell::InChild() const { return ForkGeneration() != fork_generation_; }

void ClientShell::Release() {
  if (lease && !InChild()) lease->Release();
}

void ClientShell::AbandonInChild(std::shared_ptr<void> client) {
  TubeMQService::Instance().KeepForever(std::move(client));
  lease.reset();  // an inherited lease is inert in the child
}

std::pair<std::future<Status>, std::function<void(const Status&)>> MakeCompletion() {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  return {std::move(future), [promise](const Status& status) { promise->set_value(status); }};
}

}  // namespace tubemq::service
