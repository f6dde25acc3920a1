#include "errors.h"

#include "text.h"

namespace py = pybind11;

namespace tubemq::bindings {

[[noreturn]] void ThrowStatus(const Status& status) {
  py::module_ core = py::module_::import("tubemq._core");
  py::object factory = core.attr("_error_factory");
  // A message may quote what a server said (errMsg, an exception's name and text), in
  // whatever bytes it said it: DiagnosticText, so that raising never fails on them.
  if (factory.is_none()) {
    PyErr_SetObject(PyExc_RuntimeError, DiagnosticText(status.ToString()).ptr());
    throw py::error_already_set();
  }
  py::object error = factory(status.code_value(), DiagnosticText(status.message()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

void RegisterErrors(py::module_& module) {
  module.attr("_error_factory") = py::none();
  module.def(
      "set_error_factory",
      [](py::object factory) { py::module_::import("tubemq._core").attr("_error_factory") = factory; },
      py::arg("factory"),
      "Installs the callable (code, message) -> exception used for every native error.");
  module.def("error_code_name", &ErrorCodeName, py::arg("code"),
             "The symbolic name of an error code, e.g. 'HB_NO_NODE' for 411.");
  module.def("is_retriable", &IsRetriable, py::arg("code"),
             "Whether an operation that failed with this code may succeed if retried.");
}

}  // namespace tubemq::bindings
