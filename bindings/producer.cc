// tubemq._core.Producer: the native producer, every blocking call waiting through
// WaitFor() (GIL released, interruptible).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/types.h>
#include <unistd.h>

#include <memory>
#include <future>
#include <optional>
#include <utility>
#include <vector>

#include "deliveries.h"
#include "delivery_batch.h"
#include "errors.h"
#include "producer.h"
#include "text.h"
#include "tubemq/producer.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {

// How a handle's waiter tells the delivery queue that a Python thread waits for an
// outcome (DeliveryQueue::Waiting; tubemq/_handle.py). It holds the queue weakly: a
// handle may outlive its producer and must not keep the queue alive (nor, in a forked
// child, be the one to destroy it). In a forked child it does nothing: no delivery
// thread drains there, and the queue's lock may have been held by a parent's thread
// at the fork.
class DeliveryWaits {
 public:
  DeliveryWaits(std::weak_ptr<DeliveryQueue> queue, pid_t creator_pid)
      : queue_(std::move(queue)), creator_pid_(creator_pid) {}

  // A thread waits for one outcome (+1) or no longer (-1): DeliveryQueue::Waiting.
  void Change(int change) {
    if (::getpid() != creator_pid_) return;
    const std::shared_ptr<DeliveryQueue> queue = queue_.lock();
    if (queue && !queue->TryWaiting(change)) WithoutGil([&] { queue->Waiting(change); });
  }

  // A thread waits for every outcome (+1), flush() or close(), or no longer (-1):
  // DeliveryQueue::Flushing.
  void ChangeFlushing(int change) {
    if (::getpid() != creator_pid_) return;
    const std::shared_ptr<DeliveryQueue> queue = queue_.lock();
    if (queue && !queue->TryFlushing(change)) WithoutGil([&] { queue->Flushing(change); });
  }

 private:
  std::weak_ptr<DeliveryQueue> queue_;
  pid_t creator_pid_;
};

// Owns the native producer so that its destruction (which may wait briefly for an
// unregistration) happens with the GIL released.
class PyProducer {
 public:
  PyProducer(const ClientConfig& config, const ProducerOptions& options)
      : producer_(std::make_unique<Producer>(config, options)),
        deliveries_(std::make_shared<DeliveryQueue>(static_cast<size_t>(options.max_in_flight))),
        creator_pid_(::getpid()) {
    Check(producer_->Usable());
  }
  ~PyProducer() {
    if (::getpid() != creator_pid_) {
      // A forked child: the parent's delivery thread was waiting on the queue when the
      // process forked, so destroying its condition variable here would wait forever
      // for a waiter that does not exist in this process. Leak it (the native
      // producer abandons its own state the same way).
      new std::shared_ptr<DeliveryQueue>(std::move(deliveries_));
    }
    DestroyClient(producer_);
  }

  void Start(std::optional<double> timeout) {
    auto future = producer_->Start();
    Check(WaitFor(future, timeout, "producer start"));
  }
  void Publish(std::vector<std::string> topics, std::optional<double> timeout) {
    auto future = producer_->Publish(std::move(topics));
    Check(WaitFor(future, timeout, "publish"));
  }
  // `timeout` bounds the wait for the flush and the unregistration; 0 starts the close
  // and returns at once. The service lease is given back only once the close is done:
  // a close left running keeps the I/O threads until the producer is destroyed.
  void Close(std::optional<double> timeout) {
    auto future = producer_->Close();
    if (timeout && *timeout <= 0) {
      // Not waiting means not reporting either: the close's outcome is dropped.
      if (future.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        WithoutGil([&] { producer_->ReleaseService(); });
      }
      return;
    }
    Status status = WaitFor(future, timeout, "producer close");
    WithoutGil([&] { producer_->ReleaseService(); });
    Check(status);
  }
  // Blocks until the broker has answered; raises on failure. `timeout` bounds the whole
  // call: the wait for a place in the window and then the wait for the broker.
  SendResult Send(OutgoingMessage message, bool block, std::optional<double> timeout) {
    const auto deadline = DeadlineAfter(timeout);
    AcquireSlot(block, deadline, timeout);
    auto promise = std::make_shared<std::promise<std::pair<Status, SendResult>>>();
    auto future = promise->get_future();
    WithoutGil([&] {
      producer_->SendAsync(std::move(message), [promise](const Status& status, SendResult&& result) {
        promise->set_value({status, std::move(result)});
      });
    });
    if (!WaitUntil(future, deadline)) {
      // The message was handed to the network (local failures complete the future
      // before SendAsync returns) and is still in flight: the broker may store it.
      // Its own code, not retriable, so that no caller takes a blind retry as safe.
      ThrowStatus(Status(ErrorCode::kSendOutcomeUnknown,
                         "send: no answer from the broker within " + std::to_string(*timeout) +
                             " s; the message is still in flight and may be stored, so "
                             "sending it again may store it twice"));
    }
    auto [status, result] = future.get();
    Check(status);
    return result;
  }

  // Queues a send whose outcome arrives through DrainDeliveries() under `token`.
  //
  // Taking a place in the window and handing the message to the core both take native
  // locks, so they run with the GIL released (the threading rule) — in one release, not
  // two: each GIL handoff per message was the biggest cost of send_async() in the
  // profile. Only a full window falls back to the sliced, interruptible wait.
  void SendAsync(OutgoingMessage message, uint64_t token, bool block) {
    auto hand_off = [&] {
      producer_->SendAsync(std::move(message),
                           [queue = deliveries_, token](const Status& status, SendResult&& result) {
                             queue->Push(Delivery{token, status, std::move(result)});
                           });
    };
    // A place among the unsettled sends first (deliveries.h), then one in the window.
    bool admitted = false;
    const bool sent = WithoutGil([&] {
      admitted = deliveries_->TryAdmit();
      if (!admitted || !producer_->AcquireSendSlot(std::chrono::milliseconds(0))) return false;
      hand_off();
      return true;
    });
    if (sent) return;
    try {
      if (!admitted) AwaitDeliveryRoom(block);
      admitted = true;
      AcquireSlot(block, std::nullopt, std::nullopt);
    } catch (...) {
      if (admitted) WithoutGil([&] { deliveries_->Retract(); });
      throw;
    }
    WithoutGil(hand_off);
  }

  DeliveryBatch DrainDeliveries(double wait_s, size_t max) {
    return WithoutGil([&] {
      return DeliveryBatch{deliveries_->Drain(
          std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000)), max)};
    });
  }

  // Letting the GIL go here was the delivery thread's second GIL handoff per batch (the
  // sending thread takes the GIL in between and the delivery thread then waits for it).
  // The queue's lock is held only for moments, so it is tried with the GIL held first;
  // only a busy lock is waited for, without the GIL.
  void DeliveriesSettled() {
    if (!deliveries_->TrySettled()) WithoutGil([&] { deliveries_->Settled(); });
  }
  void WakeDeliveries() { deliveries_->Wake(); }
  DeliveryWaits Waits() const { return DeliveryWaits(deliveries_, creator_pid_); }
  Producer& native() { return *producer_; }
  const Producer& native() const { return *producer_; }

 private:
  // A place for one more send, as `has_place(wait)` reports it: waited for in slices
  // (GIL released, Ctrl-C checked between them) or, when the caller must not block,
  // refused at once with QueueFullError saying `why_full`.
  template <typename HasPlace>
  void WaitForPlace(HasPlace&& has_place, bool block,
                    std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::optional<double> timeout, const char* why_full) {
    const auto attempt = [&](std::chrono::milliseconds wait) {
      return WithoutGil([&] { return has_place(wait); });
    };
    if (!block) {
      if (attempt(std::chrono::milliseconds(0))) return;
      ThrowStatus(Status(ErrorCode::kQueueFull, why_full));
    }
    if (!WaitInSlices(deadline, attempt)) {
      // Nothing was sent: an ordinary, retriable timeout.
      ThrowStatus(Status(ErrorCode::kRequestTimeout, "no place in the in-flight window within " +
                                                         std::to_string(*timeout) +
                                                         " s; nothing was sent"));
    }
  }

  // The in-flight window: max_in_flight sends awaiting their replies.
  void AcquireSlot(bool block, std::optional<std::chrono::steady_clock::time_point> deadline,
                   std::optional<double> timeout) {
    WaitForPlace([&](std::chrono::milliseconds wait) { return producer_->AcquireSendSlot(wait); },
                 block, deadline, timeout,
                 "the in-flight window is full (max_in_flight sends await their replies); "
                 "retry later, flush(), or set block_on_full");
  }

  // Sends whose outcome Python has not settled yet count against the window too
  // (deliveries.h); takes a place among them.
  void AwaitDeliveryRoom(bool block) {
    WaitForPlace([&](std::chrono::milliseconds wait) { return deliveries_->WaitAdmit(wait); },
                 block, std::nullopt, std::nullopt,
                 "max_in_flight send outcomes wait for the delivery thread (a slow "
                 "callback?); retry later, flush(), or set block_on_full");
  }

  std::unique_ptr<Producer> producer_;
  std::shared_ptr<DeliveryQueue> deliveries_;
  pid_t creator_pid_;
};

PyProducer& ProducerOf(py::handle object) { return object.cast<PyProducer&>(); }

bool CanSend(const PyProducer& producer) {
  return producer.native().Usable().ok();
}

void QueueSend(PyProducer& producer, OutgoingMessage message, uint64_t token, bool block) {
  producer.SendAsync(std::move(message), token, block);
}

namespace {

OutgoingMessage MakeMessage(std::string topic, const py::buffer& value,
                            std::optional<std::string> key,
                            std::vector<std::pair<std::string, std::string>> attributes,
                            std::string msg_type, std::string msg_time,
                            std::optional<std::string> partition) {
  OutgoingMessage message;
  message.topic = std::move(topic);
  // The one copy of the value: from the caller's buffer into the message. Through the
  // C API rather than py::buffer_info, which allocates three times per call.
  PyObject* object = value.ptr();
  if (PyBytes_CheckExact(object)) {
    message.body.assign(PyBytes_AS_STRING(object), static_cast<size_t>(PyBytes_GET_SIZE(object)));
  } else {
    Py_buffer view;
    if (PyObject_GetBuffer(object, &view, PyBUF_FULL_RO) != 0) throw py::error_already_set();
    const bool contiguous = PyBuffer_IsContiguous(&view, 'C') != 0;
    if (contiguous) {
      message.body.assign(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
    }
    PyBuffer_Release(&view);
    if (!contiguous) {
      ThrowStatus(Status(ErrorCode::kInvalidArgument, "the value must be a contiguous buffer"));
    }
  }
  message.key = std::move(key);
  message.partition = std::move(partition);
  message.attributes = std::move(attributes);
  message.msg_type = std::move(msg_type);
  message.msg_time = std::move(msg_time);
  return message;
}

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
      .def_readwrite("local_host", &ClientConfig::local_host)
      .def_readwrite("auth_user", &ClientConfig::auth_user)
      .def_readwrite("auth_password", &ClientConfig::auth_password)
      .def_readwrite("tls_enable", &ClientConfig::tls_enable)
      .def_readwrite("tls_ca_file", &ClientConfig::tls_ca_file)
      .def_readwrite("tls_verify_hostname", &ClientConfig::tls_verify_hostname)
      .def_readwrite("tls_cert_file", &ClientConfig::tls_cert_file)
      .def_readwrite("tls_key_file", &ClientConfig::tls_key_file);
  // The master list's one parser (tubemq._config asks it before building a ClientConfig).
  module.def(
      "master_list_problem",
      [](const std::string& masters) { return DiagnosticText(MasterListProblem(masters)); },
      py::arg("masters"), "'' for a valid master list, else why not.");

  // Names below come from the master's metadata: WireText, never a strict decode.
  py::class_<PartitionInfo>(module, "PartitionInfo", "A writable partition of a topic.")
      .def_property_readonly("key", TextMember(&PartitionInfo::key))
      .def_property_readonly("topic", TextMember(&PartitionInfo::topic))
      .def_readonly("partition_id", &PartitionInfo::partition_id)
      .def_readonly("broker_id", &PartitionInfo::broker_id)
      .def_property_readonly("broker_address", TextMember(&PartitionInfo::broker_address))
      .def("__repr__", [](const PartitionInfo& info) {
        return py::str("PartitionInfo({!r} at {})")
            .format(WireText(info.key), WireText(info.broker_address));
      });

  py::class_<ProducerOptions>(module, "ProducerOptions", "Settings only a producer has.")
      .def(py::init<>())
      .def_readwrite("max_in_flight", &ProducerOptions::max_in_flight)
      .def_readwrite("send_retries", &ProducerOptions::send_retries);

  py::class_<SendResult>(module, "SendResult", "What the broker said about a stored message.")
      .def_property_readonly("topic", TextMember(&SendResult::topic))
      .def_property_readonly("partition_key", TextMember(&SendResult::partition_key))
      .def_readonly("partition_id", &SendResult::partition_id)
      .def_property_readonly("broker_address", TextMember(&SendResult::broker_address))
      .def_readonly("message_id", &SendResult::message_id)
      .def_readonly("append_time", &SendResult::append_time)
      .def_readonly("append_offset", &SendResult::append_offset)
      .def_readonly("attempts", &SendResult::attempts)
      .def("__repr__", [](const SendResult& result) {
        return py::str("SendResult(topic={!r}, partition_key={!r}, message_id={}, "
                       "append_offset={})")
            .format(WireText(result.topic), WireText(result.partition_key), result.message_id,
                    result.append_offset);
      });

  py::class_<DeliveryWaits>(module, "DeliveryWaits",
                            "Tells a producer's delivery queue that a thread waits for an outcome.")
      .def("begin", [](DeliveryWaits& self) { self.Change(1); },
           "A thread starts waiting: drains stop lingering for more outcomes.")
      .def("end", [](DeliveryWaits& self) { self.Change(-1); }, "The thread no longer waits.")
      .def("begin_flush", [](DeliveryWaits& self) { self.ChangeFlushing(1); },
           "A thread starts waiting for every outcome: drains linger no more once all are in.")
      .def("end_flush", [](DeliveryWaits& self) { self.ChangeFlushing(-1); },
           "The thread no longer waits for every outcome.");

  py::class_<PyProducer>(module, "Producer", "The native producer (use tubemq.Producer).")
      .def(py::init<const ClientConfig&, const ProducerOptions&>(), py::arg("config"),
           py::arg("options"))
      .def(
          "send",
          [](PyProducer& self, std::string topic, const py::buffer& value,
             std::optional<std::string> key,
             std::vector<std::pair<std::string, std::string>> attributes, std::string msg_type,
             std::string msg_time, bool block, std::optional<double> timeout,
             std::optional<std::string> partition) {
            return self.Send(MakeMessage(std::move(topic), value, std::move(key),
                                         std::move(attributes), std::move(msg_type),
                                         std::move(msg_time), std::move(partition)),
                             block, timeout);
          },
          py::arg("topic"), py::arg("value"), py::arg("key"), py::arg("attributes"),
          py::arg("msg_type"), py::arg("msg_time"), py::arg("block"), py::arg("timeout"),
          py::arg("partition") = py::none())
      .def(
          "send_async",
          [](PyProducer& self, std::string topic, const py::buffer& value,
             std::optional<std::string> key,
             std::vector<std::pair<std::string, std::string>> attributes, std::string msg_type,
             std::string msg_time, uint64_t token, bool block,
             std::optional<std::string> partition) {
            self.SendAsync(MakeMessage(std::move(topic), value, std::move(key),
                                       std::move(attributes), std::move(msg_type),
                                       std::move(msg_time), std::move(partition)),
                           token, block);
          },
          py::arg("topic"), py::arg("value"), py::arg("key"), py::arg("attributes"),
          py::arg("msg_type"), py::arg("msg_time"), py::arg("token"), py::arg("block"),
          py::arg("partition") = py::none())
      .def("drain_deliveries", &PyProducer::DrainDeliveries, py::arg("wait_s"),
           py::arg("max_items") = 10000,
           "Waits up to wait_s; returns a DeliveryBatch of at most max_items outcomes.")
      .def("deliveries_settled", &PyProducer::DeliveriesSettled,
           "The batch drain_deliveries() returned last is settled: its room is free.")
      .def("wake_deliveries", &PyProducer::WakeDeliveries)
      .def("delivery_waits", &PyProducer::Waits,
           "What handles use to say that a thread waits for their outcome.")
      .def("in_flight", [](PyProducer& self) { return self.native().InFlight(); })
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
        const Producer::Counters counters = WithoutGil([&] { return self.native().counters(); });
        py::dict out;
        out["heartbeats_ok"] = counters.heartbeats_ok;
        out["heartbeats_failed"] = counters.heartbeats_failed;
        out["registrations"] = counters.registrations;
        out["sent_ok"] = counters.sent_ok;
        out["sent_failed"] = counters.sent_failed;
        out["retries"] = counters.retries;
        out["brokers_shielded"] = counters.brokers_shielded;
        out["reconnects"] = counters.reconnects;
        out["master_switches"] = counters.master_switches;
        out["master_standby_answers"] = counters.master_standby_answers;
        return out;
      });
}

}  // namespace tubemq::bindings
