// tubemq._core.SendShortcut: Producer.send_async() and produce() for the common case, in
// one native call.
//
// The checked path of a send (the facade's Producer._queue: argument checks, the
// tracker's registration, then a pybind11 call converting nine arguments) cost the
// sending thread about 2 us of the 7 a send cost it, against a C++ caller's 3 in all
// (issue 25). Most sends need none of its checks beyond a type test: an ASCII str topic
// (and key and msg_type), a bytes or bytearray value, attributes None or a dict of
// ASCII str to ASCII str, no msg_time, no partition, a callable or no callback, an
// open producer. Those are queued here. Every other send is handed to the checked path
// unchanged, which alone raises the typed errors: nothing a user can see is decided in
// this file, only how fast the sends that pass every check get queued.
//
// Registration mirrors DeliveryTracker.register() (tubemq/_delivery.py), on the
// tracker's own tables, so that the delivery thread cannot tell the two paths apart.
//
// Not GC-tracked: it holds the native producer, the tracker and its tables, and a plain
// function; none of them refers back to it, so it is never part of a cycle.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <new>
#include <string>
#include <utility>

#include "producer.h"
#include "send_handle.h"
#include "tubemq/message.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

struct ShortcutObject {
  PyObject_HEAD
  PyObject* native;       // the tubemq._core.Producer (strong: keeps `producer` alive)
  PyProducer* producer;   // its C++ object
  PyObject* tracker;      // the facade's DeliveryTracker
  PyObject* tokens;       // its token counter (an iterator)
  PyObject* board;        // its HandleBoard, which every handle holds
  PyObject* pending;      // its token -> handle (or None) table
  PyObject* callbacks;    // its token -> delivery callback table
  PyObject* handle_type;  // tubemq._core.SendHandle
  PyObject* checked;      // the checked path: fn(owner, *the nine arguments)
  PyObject* thread_name;    // "_thread" and "_stopping", interned once: a name made from a
  PyObject* stopping_name;  // C string on every send cost two allocations and two hashes
  int block;              // the producer's block_on_full
  int retired;            // set by close(): from then on every send takes the checked path
};

ShortcutObject* AsShortcut(PyObject* self) { return reinterpret_cast<ShortcutObject*>(self); }

// An exact str of ASCII characters, as the core wants it; false for anything else.
bool AsciiText(PyObject* object, std::string& out) {
  if (!PyUnicode_CheckExact(object)) return false;
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(object) != 0) {
    PyErr_Clear();
    return false;
  }
#endif
  if (!PyUnicode_IS_ASCII(object)) return false;
  out.assign(static_cast<const char*>(PyUnicode_DATA(object)),
             static_cast<size_t>(PyUnicode_GET_LENGTH(object)));
  return true;
}

// None, or a str AsciiText takes.
bool OptionalAsciiText(PyObject* object, std::string& out) {
  return object == Py_None || AsciiText(object, out);
}

bool Body(PyObject* object, std::string& out) {
  if (PyBytes_CheckExact(object)) {
    out.assign(PyBytes_AS_STRING(object), static_cast<size_t>(PyBytes_GET_SIZE(object)));
    return true;
  }
  if (PyByteArray_CheckExact(object)) {
    out.assign(PyByteArray_AS_STRING(object), static_cast<size_t>(PyByteArray_GET_SIZE(object)));
    return true;
  }
  return false;
}

// None, or an exact dict whose keys and values AsciiText takes, in the dict's order.
bool Attributes(PyObject* object, std::vector<std::pair<std::string, std::string>>& out) {
  if (object == Py_None) return true;
  if (!PyDict_CheckExact(object)) return false;
  out.reserve(static_cast<size_t>(PyDict_GET_SIZE(object)));
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(object, &position, &key, &value)) {
    out.emplace_back();
    if (!AsciiText(key, out.back().first) || !AsciiText(value, out.back().second)) return false;
  }
  return true;
}

// The message of a send the shortcut may queue, or false (then the checked path runs).
// args: topic, value, key, attrs, msg_type, msg_time, callback, partition.
bool CommonMessage(PyObject* const* args, OutgoingMessage& message) {
  PyObject* key = args[2];
  PyObject* callback = args[6];
  if (args[5] != Py_None || args[7] != Py_None) return false;  // msg_time, partition
  if (callback != Py_None && !PyCallable_Check(callback)) return false;
  if (!AsciiText(args[0], message.topic) || !Body(args[1], message.body)) return false;
  if (key != Py_None) {
    message.key.emplace();
    if (!AsciiText(key, *message.key)) return false;
  }
  return Attributes(args[3], message.attributes) && OptionalAsciiText(args[4], message.msg_type);
}

// DeliveryTracker.register(): a token, and a handle unless `with_handle` is false, for a
// send about to be queued; NULL with a Python error set on failure.
PyObject* Register(ShortcutObject* self, PyObject* callback, bool with_handle,
                   unsigned long long& token) {
  py::object number = py::reinterpret_steal<py::object>(PyIter_Next(self->tokens));
  if (!number) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the token counter ended");
    return nullptr;
  }
  token = PyLong_AsUnsignedLongLong(number.ptr());
  if (PyErr_Occurred()) return nullptr;
  py::object handle = py::none();
  if (with_handle) {
    handle = py::reinterpret_steal<py::object>(
        NewSendHandle(self->handle_type, self->board, token));
    if (!handle) return nullptr;
  }
  if (PyDict_SetItem(self->pending, number.ptr(), handle.ptr()) != 0) return nullptr;
  if (callback != Py_None && PyDict_SetItem(self->callbacks, number.ptr(), callback) != 0) {
    return nullptr;
  }
  // The tracker starts its delivery thread when it has none or it is stopping (see there).
  py::object thread =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(self->tracker, self->thread_name));
  py::object stopping =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(self->tracker, self->stopping_name));
  if (!thread || !stopping) return nullptr;
  if (thread.is_none() || stopping.ptr() == Py_True) {
    py::object started = py::reinterpret_steal<py::object>(
        PyObject_CallMethod(self->tracker, "_start_thread", nullptr));
    if (!started) return nullptr;
  }
  return handle.release().ptr();
}

// DeliveryTracker.forget(): the send never got queued.
void Forget(ShortcutObject* self, unsigned long long token) {
  PyObject* error_type = nullptr;
  PyObject* error_value = nullptr;
  PyObject* error_traceback = nullptr;
  PyErr_Fetch(&error_type, &error_value, &error_traceback);  // the error that is raised
  PyObject* forgotten =
      PyObject_CallMethod(self->tracker, "forget", "K", static_cast<unsigned long long>(token));
  if (forgotten == nullptr) PyErr_Clear();  // the send's own error is the one to report
  Py_XDECREF(forgotten);
  PyErr_Restore(error_type, error_value, error_traceback);
}

// queue(owner, topic, value, key, attrs, msg_type, msg_time, callback, partition,
// with_handle): the handle (or None), as Producer._queue(owner, ...) returns it.
PyObject* Queue(PyObject* object, PyObject* const* args, Py_ssize_t count) {
  ShortcutObject* self = AsShortcut(object);
  if (count != 10) {
    PyErr_Format(PyExc_TypeError, "queue() takes 10 arguments, got %zd", count);
    return nullptr;
  }
  OutgoingMessage message;
  try {
    if (self->retired || !CanSend(*self->producer) || !CommonMessage(args + 1, message)) {
      return PyObject_Vectorcall(self->checked, args, static_cast<size_t>(count), nullptr);
    }
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
  const int with_handle = PyObject_IsTrue(args[9]);
  if (with_handle < 0) return nullptr;
  unsigned long long token = 0;
  PyObject* handle = Register(self, args[7], with_handle != 0, token);
  if (handle == nullptr) return nullptr;
  try {
    QueueSend(*self->producer, std::move(message), token, self->block != 0);
  } catch (py::error_already_set& error) {
    error.restore();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  if (PyErr_Occurred()) {
    Forget(self, token);
    Py_DECREF(handle);
    return nullptr;
  }
  return handle;
}

PyObject* Retire(PyObject* object, PyObject*) {
  AsShortcut(object)->retired = 1;
  Py_RETURN_NONE;
}

PyObject* ShortcutNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* native = nullptr;
  PyObject* tracker = nullptr;
  PyObject* handle_type = nullptr;
  PyObject* checked = nullptr;
  int block = 1;
  static const char* names[] = {"native", "tracker", "handle_type", "checked", "block", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOp", const_cast<char**>(names), &native,
                                   &tracker, &handle_type, &checked, &block)) {
    return nullptr;
  }
  PyProducer* producer = nullptr;
  try {
    producer = &ProducerOf(native);
  } catch (const std::exception&) {
    PyErr_SetString(PyExc_TypeError, "native must be a tubemq._core.Producer");
    return nullptr;
  }
  py::object tokens, board, pending, callbacks;
  try {
    py::handle owner(tracker);
    tokens = owner.attr("_tokens");
    board = owner.attr("_board");
    pending = owner.attr("_pending");
    callbacks = owner.attr("_callbacks");
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  }
  if (!PyDict_Check(pending.ptr()) || !PyDict_Check(callbacks.ptr())) {
    PyErr_SetString(PyExc_TypeError, "the tracker's tables must be dicts");
    return nullptr;
  }
  py::object thread_name =
      py::reinterpret_steal<py::object>(PyUnicode_InternFromString("_thread"));
  py::object stopping_name =
      py::reinterpret_steal<py::object>(PyUnicode_InternFromString("_stopping"));
  if (!thread_name || !stopping_name) return nullptr;
  PyObject* self = type->tp_alloc(type, 0);  // a reference to a heap type, taken here
  if (self == nullptr) return nullptr;
  ShortcutObject* shortcut = AsShortcut(self);
  Py_INCREF(native);
  shortcut->native = native;
  shortcut->producer = producer;
  Py_INCREF(tracker);
  shortcut->tracker = tracker;
  shortcut->tokens = tokens.release().ptr();
  shortcut->board = board.release().ptr();
  shortcut->pending = pending.release().ptr();
  shortcut->callbacks = callbacks.release().ptr();
  Py_INCREF(handle_type);
  shortcut->handle_type = handle_type;
  Py_INCREF(checked);
  shortcut->checked = checked;
  shortcut->thread_name = thread_name.release().ptr();
  shortcut->stopping_name = stopping_name.release().ptr();
  shortcut->block = block;
  shortcut->retired = 0;
  return self;
}

void ShortcutDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  ShortcutObject* shortcut = AsShortcut(self);
  for (PyObject* held : {shortcut->native, shortcut->tracker, shortcut->tokens, shortcut->board,
                         shortcut->pending, shortcut->callbacks, shortcut->handle_type,
                         shortcut->checked, shortcut->thread_name, shortcut->stopping_name}) {
    Py_XDECREF(held);
  }
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyMethodDef shortcut_methods[] = {
    {"queue", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(Queue)), METH_FASTCALL,
     "queue(owner, topic, value, key, attrs, msg_type, msg_time, callback, partition, "
     "with_handle): queues a common send here, hands any other to the checked path."},
    {"retire", Retire, METH_NOARGS, "From now on, every send takes the checked path."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot shortcut_slots[] = {
    {Py_tp_doc, const_cast<char*>("The common case of Producer.send_async(), natively.")},
    {Py_tp_new, reinterpret_cast<void*>(ShortcutNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(ShortcutDealloc)},
    {Py_tp_methods, shortcut_methods},
    {0, nullptr},
};

PyType_Spec shortcut_spec = {
    "tubemq._core.SendShortcut",
    sizeof(ShortcutObject),
    0,
    Py_TPFLAGS_DEFAULT,
    shortcut_slots,
};

}  // namespace

void RegisterSendShortcut(py::module_& module) {
  PyObject* type = PyType_FromSpec(&shortcut_spec);
  if (type == nullptr) throw py::error_already_set();
  module.add_object("SendShortcut", py::reinterpret_steal<py::object>(type));
}

}  // namespace tubemq::bindings
