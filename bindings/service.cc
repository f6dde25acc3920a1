// The process-wide I/O service, as far as Python may see it.
#include <pybind11/pybind11.h>

#include "tubemq/service.h"

namespace py = pybind11;

namespace tubemq::bindings {

void RegisterService(py::module_& module) {
  module.def(
      "service_state",
      [] {
        const ServiceState state = GetServiceState();
        py::dict out;
        out["users"] = state.users;
        out["io_threads"] = state.io_threads;
        out["connections"] = state.connections;
        out["generation"] = state.generation;
        return out;
      },
      "Users, running I/O threads, pooled connections and engine generation of the native "
      "I/O service.");
}

}  // namespace tubemq::bindings
