#include "service/client_settings.h"

#include <unistd.h>

#include <string>

namespace tubemq {

std::string MasterListProblem(std::string_view masters) {
  std::vector<net::Endpoint> parsed;
  const Status status = net::ParseEndpointList(masters, parsed);
  return status.ok() ? std::string() : status.message();
}

}  // namespace tubemq

namespace tubemq::service {

Status ValidateClientConfig(const ClientConfig& config, std::vector<net::Endpoint>& masters,
                            std::shared_ptr<net::TlsContext>& tls) {
  Status status = net::ParseEndpointList(config.masters, masters);
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

ClientShell::ClientShell(const char* kind) : kind_(kind), pid_(getpid()) {}

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

bool ClientShell::InChild() const { return getpid() != pid_; }

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
