// tubemq._core.Message and Batch: what a fetch hands Python. Message values are exposed
// through the buffer protocol as views into the fetched bytes (no copy); a message keeps
// its batch, and so the bytes, alive.
//
// Message is a plain CPython type, not a pybind11 class: the consume loop makes one per
// message and reads a field or two of it, and there pybind11's per-instance costs
// (a heap holder, an entry in its instance registry, an atomic shared_ptr copy, a
// buffer_info per memoryview) were most of the Python side's time per message
// (issue 18). A Message is the Batch object it came from (one reference) and an index;
// it holds no other object, so the cyclic GC need not track it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "arrow_columns.h"
#include "batch_values.h"
#include "message.h"
#include "text.h"
#include "tubemq/attribute_items.h"
#include "tubemq/consumer.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

struct MessageObject {
  PyObject_HEAD
  PyObject* batch;            // the Batch (strong reference); keeps `data` alive
  const ReceivedBatch* data;  // the Batch's C++ object
  Py_ssize_t index;           // position in data->messages
};

PyTypeObject* message_type = nullptr;  // made once, when the module is imported

MessageObject* AsMessage(PyObject* self) { return reinterpret_cast<MessageObject*>(self); }
const ReceivedMessage& Received(PyObject* self) {
  const MessageObject* message = AsMessage(self);
  return message->data->messages[static_cast<size_t>(message->index)];
}

// Runs a getter body that builds a pybind11 object, for a CPython slot: a Python error
// raised inside comes back as NULL with the error set.
template <typename Make>
PyObject* Slot(Make&& make) {
  try {
    return make().release().ptr();
  } catch (py::error_already_set& error) {
    error.restore();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

// msgType / msgTime: None when the message has none.
py::object OptionalText(std::string_view text) {
  return text.empty() ? py::object(py::none()) : py::object(WireText(text));
}

void MessageDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(AsMessage(self)->batch);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

int MessageGetBuffer(PyObject* self, Py_buffer* view, int flags) {
  const std::string_view body = Received(self).body;
  return PyBuffer_FillInfo(view, self, const_cast<char*>(body.data()),
                           static_cast<Py_ssize_t>(body.size()), /*readonly=*/1, flags);
}

Py_ssize_t MessageLength(PyObject* self) {
  return static_cast<Py_ssize_t>(Received(self).body.size());
}

// message[i] and message[a:b] read the value as bytes does (an int; bytes for a slice),
// without the copy that message.value makes or the object that memoryview(message) is:
// with len(message), the cheapest way for a consume loop to look at its messages.
PyObject* MessageSubscript(PyObject* self, PyObject* key) {
  const std::string_view body = Received(self).body;
  const auto size = static_cast<Py_ssize_t>(body.size());
  if (PyIndex_Check(key)) {
    Py_ssize_t index = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (index == -1 && PyErr_Occurred()) return nullptr;
    if (index < 0) index += size;
    if (index < 0 || index >= size) {
      PyErr_SetString(PyExc_IndexError, "message index out of range");
      return nullptr;
    }
    return PyLong_FromLong(static_cast<unsigned char>(body[static_cast<size_t>(index)]));
  }
  if (PySlice_Check(key)) {
    Py_ssize_t start = 0, stop = 0, step = 0;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return nullptr;
    const Py_ssize_t length = PySlice_AdjustIndices(size, &start, &stop, step);
    if (step == 1) return PyBytes_FromStringAndSize(body.data() + start, length);
    PyObject* out = PyBytes_FromStringAndSize(nullptr, length);
    if (out == nullptr) return nullptr;
    char* bytes = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0, at = start; i < length; ++i, at += step) {
      bytes[i] = body[static_cast<size_t>(at)];
    }
    return out;
  }
  PyErr_Format(PyExc_TypeError,
               "message indices must be integers or slices (of its value), not %s; "
               "attributes are in attrs",
               Py_TYPE(key)->tp_name);
  return nullptr;
}

// Message(topic='demo', partition_key='1:demo:0', message_id=42, value=b'abc' (3 bytes)):
// the value cut to its first bytes, so that printing a message never floods a log.
PyObject* MessageRepr(PyObject* self) {
  return Slot([self] {
    constexpr size_t kShown = 20;
    const ReceivedBatch& batch = *AsMessage(self)->data;
    const ReceivedMessage& message = Received(self);
    const std::string_view head = message.body.substr(0, kShown);
    return py::str("Message(topic={!r}, partition_key={!r}, message_id={}, value={!r}{} ({} "
                   "bytes))")
        .format(WireText(batch.topic), WireText(batch.partition_key), message.message_id,
                py::bytes(head.data(), head.size()), message.body.size() > kShown ? "..." : "",
                message.body.size());
  });
}

PyObject* GetValue(PyObject* self, void*) {
  // bytes, as every other client's message value is (Kafka's value(), Pulsar's data(),
  // Java's getData()): json.loads, .decode() and .startswith work on it. The one copy is
  // made when asked; memoryview(message) is the view without a copy.
  const std::string_view body = Received(self).body;
  return PyBytes_FromStringAndSize(body.data(), static_cast<Py_ssize_t>(body.size()));
}
PyObject* GetMessageId(PyObject* self, void*) {
  return PyLong_FromLongLong(Received(self).message_id);
}
PyObject* GetIndex(PyObject* self, void*) { return PyLong_FromSsize_t(AsMessage(self)->index); }
PyObject* GetTopic(PyObject* self, void*) {
  return Slot([self] { return WireText(AsMessage(self)->data->topic); });
}
PyObject* GetPartitionKey(PyObject* self, void*) {
  return Slot([self] { return WireText(AsMessage(self)->data->partition_key); });
}
PyObject* GetBatchOffset(PyObject* self, void*) {
  return PyLong_FromLongLong(AsMessage(self)->data->offset);
}
PyObject* GetConfirmContext(PyObject* self, void*) {
  return Slot([self] { return WireText(AsMessage(self)->data->confirm_context); });
}
// Text fields are as the producer wrote them, decoded by WireText: never raises, and
// .encode("utf-8", "surrogateescape") gives the bytes back (docs/consumers.md).
PyObject* GetMsgType(PyObject* self, void*) {
  return Slot([self] { return OptionalText(Received(self).msg_type); });
}
PyObject* GetMsgTime(PyObject* self, void*) {
  return Slot([self] { return OptionalText(Received(self).msg_time); });
}
// A dict of the user's attributes, each key and value made by `make` (a new reference,
// or NULL with a Python error set), straight from the views: no vector, no pybind11
// object per item. Reading them is what a consume-attrs loop does per message.
template <typename Make>
PyObject* AttributeDict(PyObject* self, Make make) {
  PyObject* out = PyDict_New();
  if (out == nullptr) return nullptr;
  bool failed = false;
  VisitProperties(Received(self).attribute, [&](std::string_view key, std::string_view value) {
    if (failed) return;
    PyObject* key_object = make(key);
    PyObject* value_object = key_object == nullptr ? nullptr : make(value);
    failed = value_object == nullptr || PyDict_SetItem(out, key_object, value_object) < 0;
    Py_XDECREF(key_object);
    Py_XDECREF(value_object);
  });
  if (failed) {
    Py_DECREF(out);
    return nullptr;
  }
  return out;
}

PyObject* GetAttrs(PyObject* self, void*) {
  return AttributeDict(self, NewWireText);
}
PyObject* GetRawMsgType(PyObject* self, void*) {
  return Slot([self] {
    const std::string_view type = Received(self).msg_type;
    return type.empty() ? py::object(py::none())
                        : py::object(py::bytes(type.data(), type.size()));
  });
}
PyObject* GetRawAttrs(PyObject* self, void*) {
  return AttributeDict(self, [](std::string_view bytes) {
    return PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
  });
}

PyGetSetDef message_fields[] = {
    {"value", GetValue, nullptr,
     "The value, as bytes (a copy made when asked); memoryview(message) views the fetched "
     "bytes without a copy.",
     nullptr},
    {"message_id", GetMessageId, nullptr, "The id the broker gave the message.", nullptr},
    {"index", GetIndex, nullptr, "Position of the message in its batch (0 for the first).",
     nullptr},
    {"topic", GetTopic, nullptr, "The topic it came from.", nullptr},
    {"partition_key", GetPartitionKey, nullptr, "\"brokerId:topic:partitionId\".", nullptr},
    {"batch_offset", GetBatchOffset, nullptr, "Where its batch starts in the partition.",
     nullptr},
    {"confirm_context", GetConfirmContext, nullptr, "Names its batch for commits.", nullptr},
    {"msg_type", GetMsgType, nullptr,
     "The msgType item, or None; bytes that are not UTF-8 come as lone surrogates.", nullptr},
    {"msg_time", GetMsgTime, nullptr, "The msgTime item (12 digits, yyyyMMddHHmm), or None.",
     nullptr},
    {"attrs", GetAttrs, nullptr,
     "The attributes, str to str; bytes that are not UTF-8 come as lone surrogates.", nullptr},
    {"raw_msg_type", GetRawMsgType, nullptr,
     "The msgType item exactly as the producer wrote it, or None.", nullptr},
    {"raw_attrs", GetRawAttrs, nullptr,
     "The attributes exactly as the producer wrote them, bytes to bytes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// Kafka's loop asks every message `if msg.error():` first; here a poll that fails raises
// instead, so a returned message never carries an error and the answer is always None.
PyObject* MessageError(PyObject*, PyObject*) { Py_RETURN_NONE; }

PyMethodDef message_methods[] = {
    {"error", MessageError, METH_NOARGS,
     "Always None, for the Kafka loop's `if msg.error():`. A poll that fails raises a "
     "TubeMQError; every message it returns is a good one."},
    {nullptr, nullptr, 0, nullptr},
};

// Names a user of another client reaches for, and what this message has instead. Only
// looked up once the attribute was not found: the fields above cost nothing more.
struct ForeignName {
  const char* name;
  const char* instead;
};
constexpr ForeignName kForeignNames[] = {
    {"key", "a TubeMQ message carries no key (a producer's key= only picks the partition)"},
    {"offset", "use message_id (the broker's id for it) or batch_offset (where its batch "
               "starts)"},
    {"partition", "use partition_key ('brokerId:topic:partitionId')"},
    {"headers", "use attrs (str to str) or raw_attrs (the bytes as written)"},
    {"timestamp", "use msg_time ('yyyyMMddHHmm' as the producer set it, or None)"},
    {"data", "use value (bytes), or memoryview(message) for no copy"},
    {"getData", "use value (bytes), or memoryview(message) for no copy"},
    {"getAttribute", "use attrs (str to str) or raw_attrs (the bytes as written)"},
    {"getMsgType", "use msg_type"},
};

// Attribute lookup as usual; a miss on a name of another client's message says what to
// use here instead of only that the name is unknown.
PyObject* MessageGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  if (!PyUnicode_Check(name)) return nullptr;
  for (const ForeignName& foreign : kForeignNames) {
    if (PyUnicode_CompareWithASCIIString(name, foreign.name) == 0) {
      PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s': %s",
                   Py_TYPE(self)->tp_name, foreign.name, foreign.instead);
      return nullptr;
    }
  }
  return nullptr;  // the usual AttributeError, as raised
}

PyType_Slot message_slots[] = {
    {Py_tp_doc,
     const_cast<char*>("A received message: value is its bytes; memoryview(msg) views them "
                       "without a copy, and msg[i], msg[a:b] and len(msg) read them as "
                       "bytes does.")},
    {Py_tp_dealloc, reinterpret_cast<void*>(MessageDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(MessageRepr)},
    {Py_tp_getset, message_fields},
    {Py_tp_methods, message_methods},
    {Py_tp_getattro, reinterpret_cast<void*>(MessageGetAttr)},
    {Py_mp_length, reinterpret_cast<void*>(MessageLength)},
    {Py_mp_subscript, reinterpret_cast<void*>(MessageSubscript)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(MessageGetBuffer)},
    {0, nullptr},
};

// Not a base type, and not GC-tracked (it holds no cycle). Only a fetch makes messages:
// Message() from Python would have no batch behind it.
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
constexpr unsigned kMessageFlags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION;
#else
constexpr unsigned kMessageFlags = Py_TPFLAGS_DEFAULT;  // Python 3.9: tp_new cleared below
#endif

PyType_Spec message_spec = {
    "tubemq._core.Message",
    sizeof(MessageObject),
    0,
    kMessageFlags,
    message_slots,
};

// The messages of `batch_object` (a Batch), one Message each, in order.
py::list MessagesOf(py::object batch_object) {
  const ReceivedBatch& batch = BatchData(batch_object.ptr());
  const auto count = static_cast<Py_ssize_t>(batch.messages.size());
  py::list out(count);
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* message = NewMessage(batch_object.ptr(), &batch, i);
    if (message == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), i, message);  // steals it
  }
  return out;
}

}  // namespace

PyObject* NewMessage(PyObject* batch, const ReceivedBatch* data, Py_ssize_t index) {
  MessageObject* message = PyObject_New(MessageObject, message_type);
  if (message == nullptr) return nullptr;
  Py_INCREF(batch);
  message->batch = batch;
  message->data = data;
  message->index = index;
  return reinterpret_cast<PyObject*>(message);
}

void ReuseMessage(PyObject* object, PyObject* batch, const ReceivedBatch* data,
                  Py_ssize_t index) {
  MessageObject* message = AsMessage(object);
  message->data = data;
  message->index = index;
  if (message->batch != batch) {
    PyObject* previous = message->batch;
    Py_INCREF(batch);
    message->batch = batch;
    Py_XDECREF(previous);  // last: dropping the old batch may run arbitrary code
  }
}

bool MessagePlace(PyObject* object, PyObject** batch, Py_ssize_t* index) {
  if (Py_TYPE(object) != message_type) return false;  // not a base type: exact check
  *batch = AsMessage(object)->batch;
  *index = AsMessage(object)->index;
  return true;
}

const ReceivedBatch& BatchData(PyObject* batch) {
  return py::handle(batch).cast<const ReceivedBatch&>();
}

void RegisterMessages(py::module_& module) {
  PyObject* type = PyType_FromSpec(&message_spec);
  if (type == nullptr) throw py::error_already_set();
  message_type = reinterpret_cast<PyTypeObject*>(type);
  message_type->tp_new = nullptr;  // what DISALLOW_INSTANTIATION does, for Python 3.9
  module.add_object("Message", py::reinterpret_borrow<py::object>(type));
  RegisterValuesRun(module);
  // The module keeps the type alive for as long as the process runs; message_type
  // borrows that reference.
  Py_DECREF(type);

  py::class_<ReceivedBatch, std::shared_ptr<ReceivedBatch>>(module, "Batch",
                                                             "The messages of one fetch.")
      .def_property_readonly("topic", TextMember(&ReceivedBatch::topic))
      .def_property_readonly("partition_key", TextMember(&ReceivedBatch::partition_key))
      .def_property_readonly("confirm_context", TextMember(&ReceivedBatch::confirm_context))
      .def_readonly("offset", &ReceivedBatch::offset)
      .def_readonly("max_offset", &ReceivedBatch::max_offset)
      .def("messages", &MessagesOf)
      .def("arrow_columns", &ArrowColumns,
           "The messages as Arrow buffers (see tubemq.spark._arrow), without a Python "
           "object per message.")
      .def("values", &BatchValues, kBatchValuesDoc)
      .def("__len__", [](const ReceivedBatch& batch) { return batch.messages.size(); });
}

}  // namespace tubemq::bindings
