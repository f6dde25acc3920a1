// tubemq._core.SendHandle: the handle Producer.send_async() returns. This file makes its
// storage; tubemq._handle installs its Future-like methods on the type, in Python.
//
// A plain CPython type without Py_TPFLAGS_HAVE_GC, for the same reason as Message: with
// 20,000 sends in flight, a concurrent.futures.Future each (its Condition, RLock, waiter
// list, ...) was some twelve GC-tracked objects per send, and every full collection held
// the GIL for 50-125 ms walking them (issue 25). A handle is five fields: its tracker,
// its token, and the outcome once known. It never holds a user callback or an exception
// (those could reference the handle back, a cycle the GC could not see through an
// untracked object); the tracker keeps callbacks by token, and an exception is made
// afresh from the code and message when asked for.
//
// The methods are installed on this type rather than written in a Python subclass:
// CPython makes every class a `class` statement creates GC-tracked (even with
// `__slots__ = ()` over an untracked base; checked on 3.9 to 3.11), so the instances of
// a subclass would be tracked again.
#include "send_handle.h"

#include <pybind11/pybind11.h>
#include <structmember.h>

#include <cstdint>

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

struct SendHandleObject {
  PyObject_HEAD
  PyObject* owner;           // the DeliveryTracker that completes it (strong reference)
  unsigned long long token;  // its key in the tracker and in the native delivery queue
  int status;                // 0 pending, 1 succeeded, 2 failed
  int code;                  // the error code when failed
  PyObject* outcome;         // the SendResult when succeeded, the error text when failed
};

SendHandleObject* AsHandle(PyObject* self) { return reinterpret_cast<SendHandleObject*>(self); }

PyObject* MakeHandle(PyTypeObject* type, PyObject* owner, unsigned long long token) {
  PyObject* self = type->tp_alloc(type, 0);  // a reference to a heap type, taken here
  if (self == nullptr) return nullptr;
  SendHandleObject* handle = AsHandle(self);
  Py_INCREF(owner);
  handle->owner = owner;
  handle->token = token;
  handle->status = 0;
  handle->code = 0;
  Py_INCREF(Py_None);
  handle->outcome = Py_None;
  return self;
}

PyObject* HandleNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* owner = nullptr;
  unsigned long long token = 0;
  static const char* names[] = {"owner", "token", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OK", const_cast<char**>(names), &owner,
                                   &token)) {
    return nullptr;
  }
  return MakeHandle(type, owner, token);
}

void HandleDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(AsHandle(self)->owner);
  Py_XDECREF(AsHandle(self)->outcome);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyMemberDef handle_members[] = {
    {"_owner", T_OBJECT_EX, offsetof(SendHandleObject, owner), READONLY,
     "The tracker that completes the send."},
    {"_token", T_ULONGLONG, offsetof(SendHandleObject, token), READONLY,
     "The send's key in its tracker."},
    {"_status", T_INT, offsetof(SendHandleObject, status), 0,
     "0 pending, 1 succeeded, 2 failed."},
    {"_code", T_INT, offsetof(SendHandleObject, code), 0, "The error code of a failed send."},
    {"_outcome", T_OBJECT, offsetof(SendHandleObject, outcome), 0,
     "The SendResult, or the error text of a failed send."},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot handle_slots[] = {
    {Py_tp_doc, const_cast<char*>("The outcome of one asynchronous send (see tubemq.SendHandle).")},
    {Py_tp_new, reinterpret_cast<void*>(HandleNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(HandleDealloc)},
    {Py_tp_members, handle_members},
    {0, nullptr},
};

// Not a base type, and not GC-tracked. Not immutable either: tubemq._handle sets the
// methods on it when the package is imported.
PyType_Spec handle_spec = {
    "tubemq._core.SendHandle",
    sizeof(SendHandleObject),
    0,
    Py_TPFLAGS_DEFAULT,
    handle_slots,
};

}  // namespace

// The type is known by its deallocator, which no other type has: no pointer to the type
// needs keeping anywhere.
bool IsSendHandle(PyObject* object) {
  return Py_TYPE(object)->tp_dealloc == HandleDealloc;
}

PyObject* NewSendHandle(PyObject* type, PyObject* owner, unsigned long long token) {
  if (!PyType_Check(type) || reinterpret_cast<PyTypeObject*>(type)->tp_dealloc != HandleDealloc) {
    return PyObject_CallFunction(type, "OK", owner, token);
  }
  return MakeHandle(reinterpret_cast<PyTypeObject*>(type), owner, token);
}

void CompleteSendHandle(PyObject* self, bool succeeded, int code, PyObject* outcome) {
  SendHandleObject* handle = AsHandle(self);
  Py_INCREF(outcome);
  Py_SETREF(handle->outcome, outcome);
  handle->code = succeeded ? 0 : code;
  handle->status = succeeded ? 1 : 2;
}

void RegisterSendHandle(py::module_& module) {
  PyObject* type = PyType_FromSpec(&handle_spec);
  if (type == nullptr) throw py::error_already_set();
  module.add_object("SendHandle", py::reinterpret_steal<py::object>(type));
}

}  // namespace tubemq::bindings
