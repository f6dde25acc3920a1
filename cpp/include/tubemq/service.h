// What the application may see of the process-wide TubeMQService: whether its I/O
// threads run and how many clients use it. Clients start and stop it themselves.
#pragma once

#include <cstddef>

namespace tubemq {

struct ServiceState {
  int users = 0;           // live clients holding the service
  int io_threads = 0;      // running I/O threads (0 when stopped)
  size_t connections = 0;  // pooled connections
  int generation = 0;      // how many I/O engines this process has created
};

ServiceState GetServiceState();

}  // namespace tubemq
