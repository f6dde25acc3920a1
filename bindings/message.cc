// tubemq._core.Message and Batch: what a fetch hands Python. Message values are exposed
// through the buffer protocol as views into the fetched bytes (no copy); a message keeps
// its batch, and so the bytes, alive.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "arrow_columns.h"
#include "text.h"
#include "tubemq/consumer.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

// One message of a batch; keeps the batch (and so its bytes) alive.
struct PyMessage {
  std::shared_ptr<const ReceivedBatch> batch;
  size_t index = 0;
  const ReceivedMessage& message() const { return batch->messages[index]; }
};

// msgType / msgTime: None when the message has none.
py::object OptionalText(std::string_view text) {
  return text.empty() ? py::object(py::none()) : py::object(WireText(text));
}

// Message(topic='demo', partition_key='1:demo:0', message_id=42, value=b'abc' (3 bytes)):
// the value cut to its first bytes, so that printing a message never floods a log.
py::str MessageRepr(const PyMessage& self) {
  constexpr size_t kShown = 20;
  const std::string_view body = self.message().body;
  const std::string_view head = body.substr(0, kShown);
  return py::str("Message(topic={!r}, partition_key={!r}, message_id={}, value={!r}{} ({} "
                 "bytes))")
      .format(WireText(self.batch->topic), WireText(self.batch->partition_key),
              self.message().message_id, py::bytes(head.data(), head.size()),
              body.size() > kShown ? "..." : "", body.size());
}

}  // namespace

void RegisterMessages(py::module_& module) {
  py::class_<PyMessage>(module, "Message", py::buffer_protocol(),
                        "A received message; its bytes are the buffer (memoryview(msg)).")
      .def_buffer([](PyMessage& self) {
        const std::string_view body = self.message().body;
        return py::buffer_info(const_cast<char*>(body.data()), 1,
                               py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(body.size())}, {1}, /*readonly=*/true);
      })
      .def_property_readonly(
          "value",
          [](py::object self) {
            // A view over the message itself: it exports the fetched bytes through the
            // buffer protocol and holds the batch, so the bytes live as long as the view.
            PyObject* view = PyMemoryView_FromObject(self.ptr());
            if (view == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::memoryview>(view);
          },
          "The value as a read-only memoryview of the fetched bytes (no copy); it keeps "
          "the batch alive.")
      .def_property_readonly("message_id", [](const PyMessage& self) {
        return self.message().message_id;
      })
      .def_property_readonly("index", [](const PyMessage& self) { return self.index; },
                             "Position of the message in its batch (0 for the first).")
      .def_property_readonly("topic",
                             [](const PyMessage& self) { return WireText(self.batch->topic); })
      .def_property_readonly(
          "partition_key", [](const PyMessage& self) { return WireText(self.batch->partition_key); })
      .def_property_readonly("batch_offset", [](const PyMessage& self) { return self.batch->offset; })
      .def_property_readonly("confirm_context", [](const PyMessage& self) {
        return WireText(self.batch->confirm_context);
      })
      // Text fields are as the producer wrote them, decoded by WireText: never raises,
      // and .encode("utf-8", "surrogateescape") gives the bytes back (docs/consumers.md).
      .def_property_readonly(
          "msg_type", [](const PyMessage& self) { return OptionalText(self.message().msg_type); },
          "The msgType item, or None; bytes that are not UTF-8 come as lone surrogates.")
      .def_property_readonly(
          "msg_time", [](const PyMessage& self) { return OptionalText(self.message().msg_time); },
          "The msgTime item (12 digits, yyyyMMddHHmm), or None.")
      .def_property_readonly(
          "attrs",
          [](const PyMessage& self) {
            py::dict out;
            for (const auto& [key, value] : self.message().Properties()) {
              out[WireText(key)] = WireText(value);
            }
            return out;
          },
          "The attributes, str to str; bytes that are not UTF-8 come as lone surrogates.")
      .def_property_readonly(
          "raw_msg_type",
          [](const PyMessage& self) {
            const std::string_view type = self.message().msg_type;
            return type.empty() ? py::object(py::none())
                                : py::object(py::bytes(type.data(), type.size()));
          },
          "The msgType item exactly as the producer wrote it, or None.")
      .def_property_readonly(
          "raw_attrs",
          [](const PyMessage& self) {
            py::dict out;
            for (const auto& [key, value] : self.message().Properties()) {
              out[py::bytes(key.data(), key.size())] = py::bytes(value.data(), value.size());
            }
            return out;
          },
          "The attributes exactly as the producer wrote them, bytes to bytes.")
      .def("__len__", [](const PyMessage& self) { return self.message().body.size(); })
      .def("__repr__", &MessageRepr);

  py::class_<ReceivedBatch, std::shared_ptr<ReceivedBatch>>(module, "Batch",
                                                             "The messages of one fetch.")
      .def_property_readonly("topic", TextMember(&ReceivedBatch::topic))
      .def_property_readonly("partition_key", TextMember(&ReceivedBatch::partition_key))
      .def_property_readonly("confirm_context", TextMember(&ReceivedBatch::confirm_context))
      .def_readonly("offset", &ReceivedBatch::offset)
      .def_readonly("max_offset", &ReceivedBatch::max_offset)
      .def("messages", [](const std::shared_ptr<ReceivedBatch>& batch) {
        py::list out;
        for (size_t i = 0; i < batch->messages.size(); ++i) {
          out.append(py::cast(PyMessage{batch, i}));
        }
        return out;
      })
      .def("arrow_columns", &ArrowColumns,
           "The messages as Arrow buffers (see tubemq.spark._arrow), without a Python "
           "object per message.")
      .def("__len__", [](const ReceivedBatch& batch) { return batch.messages.size(); });
}

}  // namespace tubemq::bindings
