// tubemq._core: the private native module behind the tubemq package. One file per
// concept; this one only assembles them. Importing it starts no thread.
#include <pybind11/pybind11.h>

#include "tubemq/version.h"

namespace py = pybind11;

namespace tubemq::bindings {
void RegisterErrors(py::module_& module);
void RegisterLogging(py::module_& module);
void RegisterService(py::module_& module);
void RegisterDeliveryBatch(py::module_& module);
void RegisterProducer(py::module_& module);
void RegisterMessages(py::module_& module);
void RegisterMessageCursor(py::module_& module);
void RegisterConsumer(py::module_& module);
void RegisterInLong(py::module_& module);
void RegisterNames(py::module_& module);
void RegisterSendHandle(py::module_& module);
void RegisterSendShortcut(py::module_& module);
}  // namespace tubemq::bindings

PYBIND11_MODULE(_core, module) {
  module.doc() = "Native core of the tubemq package (private; use the tubemq package).";
  module.attr("__version__") = tubemq::kVersion;
  tubemq::bindings::RegisterErrors(module);
  tubemq::bindings::RegisterLogging(module);
  tubemq::bindings::RegisterService(module);
  tubemq::bindings::RegisterDeliveryBatch(module);
  tubemq::bindings::RegisterProducer(module);
  tubemq::bindings::RegisterMessages(module);
  tubemq::bindings::RegisterMessageCursor(module);
  tubemq::bindings::RegisterConsumer(module);
  tubemq::bindings::RegisterInLong(module);
  tubemq::bindings::RegisterNames(module);
  tubemq::bindings::RegisterSendHandle(module);
  tubemq::bindings::RegisterSendShortcut(module);
}
