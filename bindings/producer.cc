// tubemq._core.Producer: the native producer, every blocking call waiting through
// WaitFor() (GIL released, interruptible).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "errors.h"
#include "tubemq/producer.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Owns the native producer so that its destruction (which may wait briefly for an
// unregistration) happens with the GIL released.
class PyProducer {
 public:
  explicit PyProducer(const ClientConfig& config)
      : producer_(std::make_unique<Producer>(config)) {
    Check(producer_->Usable());
  }
  ~PyProducer() {
    if (Py_IsInitialized() && !InterpreterFinalizing()) {
      py::gil_scoped_release release;
      producer_.reset();
    } else {
      producer_.reset();
    }
  }

  void Start(std::optional<double> timeout) {
    auto future = producer_->Start();
    Check(WaitFor(future, timeout, "producer start"));
  }
  void Publish(std::vector<std::string> topics, std::optional<double> timeout) {
    auto future = producer_->Publish(std::move(topics));
    Check(WaitFor(future, timeout, "publish"));
  }
  void Close(std::optional<double> timeout) {
    auto future = producer_->Close();
    Status status = WaitFor(future, timeout, "producer close");
    {
      py::gil_scoped_release release;
      producer_->ReleaseService();
    }
    Check(status);
  }
  Producer& native() { return *producer_; }

 private:
  std::unique_ptr<Producer> producer_;
};

}  // namespace

void RegisterProducer(py::module_& module) {
  py::class_<ClientConfig>(module, "ClientConfig", "Settings of a native client.")
      .def(py::init<>())
      .def_readwrite("masters", &ClientConfig::masters)
      .def_readwrite("rpc_timeout_ms", &ClientConfig::rpc_timeout_ms)
      .def_readwrite("connect_timeout_ms", &ClientConfig::connect_timeout_ms)
      .def_readwrite("heartbeat_period_ms", &ClientConfig::heartbeat_period_ms)
      .def_readwrite("register_attempts", &ClientConfig::register_attempts)
      .def_readwrite("register_retry_wait_ms", &ClientConfig::register_retry_wait_ms)
      .def_readwrite("local_host", &ClientConfig::local_host);

  py::class_<PartitionInfo>(module, "PartitionInfo", "A writable partition of a topic.")
      .def_readonly("key", &PartitionInfo::key)
      .def_readonly("topic", &PartitionInfo::topic)
      .def_readonly("partition_id", &PartitionInfo::partition_id)
      .def_readonly("broker_id", &PartitionInfo::broker_id)
      .def_readonly("broker_address", &PartitionInfo::broker_address)
      .def("__repr__", [](const PartitionInfo& info) {
        return "PartitionInfo('" + info.key + "' at " + info.broker_address + ")";
      });

  py::class_<PyProducer>(module, "Producer", "The native producer (use tubemq.Producer).")
      .def(py::init<const ClientConfig&>(), py::arg("config"))
      .def("start", &PyProducer::Start, py::arg("timeout") = py::none())
      .def("publish", &PyProducer::Publish, py::arg("topics"), py::arg("timeout") = py::none())
      .def("close", &PyProducer::Close, py::arg("timeout") = py::none())
      .def("partitions",
           [](PyProducer& self, const std::string& topic) {
             return self.native().Partitions(topic);
           },
           py::arg("topic"))
      .def("published_topics",
           [](PyProducer& self) { return self.native().PublishedTopics(); })
      .def_property_readonly("client_id",
                             [](PyProducer& self) { return self.native().client_id(); })
      .def("counters", [](PyProducer& self) {
        const Producer::Counters counters = self.native().counters();
        py::dict out;
        out["heartbeats_ok"] = counters.heartbeats_ok;
        out["heartbeats_failed"] = counters.heartbeats_failed;
        out["registrations"] = counters.registrations;
        return out;
      });
}

}  // namespace tubemq::bindings
