// Log records for Python: drained by the facade's dispatcher thread (tubemq/_log.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "text.h"
#include "tubemq/logging.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {

void RegisterLogging(py::module_& module) {
  module.def(
      "drain_log_records",
      [](double wait_s, size_t max_records) {
        std::vector<LogRecord> records = WithoutGil([&] {
          return DrainLogRecords(std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000)),
                                 max_records);
        });
        // Python objects are built only here, with the GIL held and no native lock.
        py::list out;
        for (const LogRecord& record : records) {
          // Server text may not be valid UTF-8; a log line must never raise for that,
          // and shows bad bytes as \xNN like error messages do.
          out.append(py::make_tuple(record.level, record.logger,
                                    DiagnosticText(record.message), record.created,
                                    record.thread));
        }
        return out;
      },
      py::arg("wait_s"), py::arg("max_records") = 1000,
      "Waits up to wait_s for native log records; returns (level, logger, message, created, "
      "thread) tuples.");
  module.def("set_log_level", &SetLogLevel, py::arg("level"),
             "Native records below this Python logging level are not produced.");
  module.def("get_log_level", &GetLogLevel);
  module.def("dropped_log_records", &DroppedLogRecords,
             "How many records were discarded because nobody drained the queue in time.");
  module.def("wake_log_drainers", [] {
    WithoutGil([] { WakeLogDrainers(); });
  });
}

}  // namespace tubemq::bindings
