// What every client's public shell shares: checking the common settings, and turning
// the core's completion callbacks into the futures the public API returns.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "net/endpoint.h"
#include "tubemq/client_config.h"
#include "tubemq/status.h"

namespace tubemq::service {

Status ValidateClientConfig(const ClientConfig& config, std::vector<net::Endpoint>& masters);

std::future<Status> ReadyFuture(Status status);

// A future and the callback that completes it.
std::pair<std::future<Status>, std::function<void(const Status&)>> MakeCompletion();

}  // namespace tubemq::service
