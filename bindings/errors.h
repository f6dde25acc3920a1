// Turning a core Status into a Python exception. The exception classes live in the
// facade (tubemq/errors.py); the facade hands the module a factory at import time, so
// this floor never imports the one above it.
#pragma once

#include <pybind11/pybind11.h>

#include "tubemq/status.h"

namespace tubemq::bindings {

// Raises the Python exception for `status` (which must not be OK).
[[noreturn]] void ThrowStatus(const Status& status);

// Raises it unless the status is OK.
inline void Check(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

void RegisterErrors(pybind11::module_& module);

}  // namespace tubemq::bindings
