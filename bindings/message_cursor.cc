// tubemq._core.MessageCursor: the batch a consumer is handing out, and where it is in it.
// poll() takes the next message in one C call, and `for message in consumer` is one
// tp_iternext per message (MessageIterator, below) while the batch lasts (issue 18):
// Python-level code per message (a generator, poll(), a timeout check, list.pop()) cost
// more than the whole rest of the hand-out. Each Message is made when it is handed out,
// not a list of them up front.
//
// The cursor also takes the commonest commit of the Kafka loop (poll, process,
// commit(message)): a message of the batch at hand that is not its last only raises the
// count of committed messages in the batch's ledger entry (the facade's _Unsettled), in
// one C call. Made in Python, that commit cost about as much as the poll itself.
//
// A hand-out reuses a Message its caller has dropped (spare, below) instead of freeing
// one and allocating the next: in `for message in consumer`, the loop's variable still
// holds the previous message while the next one is taken, so the cursor keeps the last
// two it handed out and reuses the older once it alone holds it. A Message nobody else
// holds cannot be told from a new one (it has no identity a caller could keep: no
// weak references, no attributes of its own); one a caller keeps is never touched.
//
// A cursor belongs to one process: loaded before a fork(), it hands out nothing in the
// child (the child's consumer then raises ForkedClientError on its slow path). A fork
// is noticed through a counter bumped by a pthread_atfork handler, so that taking a
// message costs no getpid() call.
//
// Plain CPython types, like Message (message.cc), for the same reason: per-call
// pybind11 dispatch would be most of the cost being removed.
#include <pthread.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <stdexcept>

#include "message.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

// Bumped in the child after every fork(); a cursor loaded under another value is stale.
std::atomic<unsigned long> fork_generation{0};

void NoteForkInChild() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

struct CursorObject {
  PyObject_HEAD
  PyObject* batch;            // the Batch at hand (strong reference), or NULL
  PyObject* entry;            // its ledger entry in the facade (strong reference), or NULL
  const ReceivedBatch* data;  // its C++ object
  Py_ssize_t next;            // index of the next message to hand out
  Py_ssize_t count;           // messages in the batch
  unsigned long generation;   // fork_generation when loaded
  double max_timeout;         // take(): the largest timeout handled here
  PyObject* spare[2];         // the last two Messages handed out (strong references)
  int turn;                   // the spare the next hand-out may reuse
};

CursorObject* AsCursor(PyObject* self) { return reinterpret_cast<CursorObject*>(self); }

// What MessageCursor.iterate() returns: `for message in consumer` (below).
struct IteratorObject {
  PyObject_HEAD
  PyObject* cursor;  // a MessageCursor (strong reference)
  PyObject* refill;  // the facade's slow path: a message or None (strong reference)
};

IteratorObject* AsIterator(PyObject* self) { return reinterpret_cast<IteratorObject*>(self); }

PyTypeObject* iterator_type = nullptr;  // made once, when the module is imported
PyObject* committed_name = nullptr;     // "committed", interned once, as the entry names it

// Whether a batch is at hand in this process (not one loaded before a fork()).
bool Holds(const CursorObject* cursor) {
  return cursor->batch != nullptr &&
         cursor->generation == fork_generation.load(std::memory_order_relaxed);
}

Py_ssize_t Remaining(const CursorObject* cursor) {
  return Holds(cursor) ? cursor->count - cursor->next : 0;
}

// Whether only the cursor holds `message`, so that it may be reused. Never in a build
// without the GIL, where another thread may be taking a reference meanwhile.
bool OnlyCursorHolds(PyObject* message) {
#ifdef Py_GIL_DISABLED
  (void)message;
  return false;
#else
  return Py_REFCNT(message) == 1;
#endif
}

// The next message (a new reference), or NULL: without an error set when none is left.
PyObject* Take(CursorObject* cursor) {
  if (Remaining(cursor) == 0) return nullptr;
  const Py_ssize_t index = cursor->next;
  PyObject* spare = cursor->spare[cursor->turn];
  if (spare != nullptr && OnlyCursorHolds(spare)) {
    // The caller's reference and the cursor's step first: repointing may drop the
    // spare's old batch, which may run arbitrary code.
    Py_INCREF(spare);
    cursor->turn ^= 1;
    ++cursor->next;
    ReuseMessage(spare, cursor->batch, cursor->data, index);
    return spare;
  }
  PyObject* message = NewMessage(cursor->batch, cursor->data, index);
  if (message == nullptr) return nullptr;
  Py_INCREF(message);  // the caller's reference; the spare is the cursor's
  cursor->spare[cursor->turn] = message;
  cursor->turn ^= 1;
  ++cursor->next;
  Py_XDECREF(spare);  // a caller holds it too: only the cursor's reference goes
  return message;
}

void Clear(CursorObject* cursor) {
  PyObject* batch = cursor->batch;
  PyObject* entry = cursor->entry;
  PyObject* spares[2] = {cursor->spare[0], cursor->spare[1]};
  cursor->batch = cursor->entry = nullptr;
  cursor->spare[0] = cursor->spare[1] = nullptr;
  cursor->data = nullptr;
  cursor->next = cursor->count = 0;
  // Last: dropping them may run arbitrary code.
  Py_XDECREF(spares[0]);
  Py_XDECREF(spares[1]);
  Py_XDECREF(entry);
  Py_XDECREF(batch);
}

// poll()'s timeout in the form its fast path takes without a Python-level check: None,
// or an int or float (bool excluded) from 0 to max_timeout. Anything else goes to the
// facade's slow path, which raises the typed error for it.
bool PlainTimeout(PyObject* timeout, double max_timeout) {
  if (timeout == Py_None) return true;
  if (PyFloat_CheckExact(timeout)) {
    const double seconds = PyFloat_AS_DOUBLE(timeout);
    return seconds >= 0 && seconds <= max_timeout;  // false for NaN
  }
  if (PyLong_CheckExact(timeout)) {
    int overflow = 0;
    const long long seconds = PyLong_AsLongLongAndOverflow(timeout, &overflow);
    return overflow == 0 && seconds >= 0 && static_cast<double>(seconds) <= max_timeout;
  }
  return false;
}

PyObject* CursorNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"max_timeout", nullptr};
  double max_timeout = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d:MessageCursor", const_cast<char**>(keywords),
                                   &max_timeout)) {
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);  // zero-filled: no batch
  if (self == nullptr) return nullptr;
  AsCursor(self)->max_timeout = max_timeout;
  return self;
}

void CursorDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Clear(AsCursor(self));
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyObject* CursorLoad(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "load() takes a Batch and its entry, got %zd arguments",
                 nargs);
    return nullptr;
  }
  PyObject* batch = args[0];
  PyObject* entry = args[1];
  const ReceivedBatch* data = nullptr;
  try {
    data = &BatchData(batch);
  } catch (const py::cast_error&) {
    PyErr_Format(PyExc_TypeError, "load() takes a Batch, got %s", Py_TYPE(batch)->tp_name);
    return nullptr;
  }
  CursorObject* cursor = AsCursor(self);
  PyObject* previous_batch = cursor->batch;
  PyObject* previous_entry = cursor->entry;
  Py_INCREF(batch);
  Py_INCREF(entry);
  cursor->batch = batch;
  cursor->entry = entry;
  cursor->data = data;
  cursor->next = 0;
  cursor->count = static_cast<Py_ssize_t>(data->messages.size());
  cursor->generation = fork_generation.load(std::memory_order_relaxed);
  Py_XDECREF(previous_entry);
  Py_XDECREF(previous_batch);
  Py_RETURN_NONE;
}

// commit(message, asynchronous): True when `message` is a Message of the batch at hand
// other than its last and `asynchronous` is None; its entry's `committed` is then raised
// to cover it, and nothing else is due (the batch is confirmed with its last message).
// False for anything else, which the facade's slow path handles (and checks).
PyObject* CursorCommit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "commit() takes a message and asynchronous, got %zd "
                 "arguments", nargs);
    return nullptr;
  }
  CursorObject* cursor = AsCursor(self);
  PyObject* batch = nullptr;
  Py_ssize_t index = 0;
  if (args[1] != Py_None || !Holds(cursor) || cursor->entry == nullptr ||
      !MessagePlace(args[0], &batch, &index) || batch != cursor->batch ||
      index + 1 >= cursor->count) {
    Py_RETURN_FALSE;
  }
  PyObject* entry = cursor->entry;
  Py_INCREF(entry);  // the attribute calls below may run code that reloads the cursor
  PyObject* current = PyObject_GetAttr(entry, committed_name);
  const Py_ssize_t committed = current == nullptr ? -1 : PyLong_AsSsize_t(current);
  Py_XDECREF(current);
  bool failed = committed == -1 && PyErr_Occurred();
  if (!failed && committed < index + 1) {
    PyObject* covered = PyLong_FromSsize_t(index + 1);
    failed = covered == nullptr || PyObject_SetAttr(entry, committed_name, covered) < 0;
    Py_XDECREF(covered);
  }
  Py_DECREF(entry);
  if (failed) return nullptr;
  Py_RETURN_TRUE;
}

PyObject* CursorClear(PyObject* self, PyObject*) {
  Clear(AsCursor(self));
  Py_RETURN_NONE;
}

PyObject* CursorTake(PyObject* self, PyObject* timeout) {
  CursorObject* cursor = AsCursor(self);
  if (PlainTimeout(timeout, cursor->max_timeout)) {
    if (PyObject* message = Take(cursor)) return message;
    if (PyErr_Occurred()) return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* CursorIterate(PyObject* self, PyObject* refill) {
  if (!PyCallable_Check(refill)) {
    PyErr_Format(PyExc_TypeError, "iterate() takes a callable, got %s", Py_TYPE(refill)->tp_name);
    return nullptr;
  }
  PyObject* iterator = PyType_GenericAlloc(iterator_type, 0);
  if (iterator == nullptr) return nullptr;
  Py_INCREF(self);
  Py_INCREF(refill);
  AsIterator(iterator)->cursor = self;
  AsIterator(iterator)->refill = refill;
  return iterator;
}

Py_ssize_t CursorLength(PyObject* self) { return Remaining(AsCursor(self)); }

PyObject* GetBatch(PyObject* self, void*) {
  PyObject* batch = AsCursor(self)->batch;
  if (batch == nullptr) batch = Py_None;
  Py_INCREF(batch);
  return batch;
}

PyMethodDef cursor_methods[] = {
    {"load", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(CursorLoad)),
     METH_FASTCALL,
     PyDoc_STR("load($self, batch, entry, /)\n--\n\nHands out `batch` from its first "
               "message on, in place of the batch at hand; commit() marks `entry`, the "
               "facade's record of it.")},
    {"commit", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(CursorCommit)),
     METH_FASTCALL,
     PyDoc_STR("commit($self, message, asynchronous, /)\n--\n\nTrue when `message` is a "
               "Message of the batch at hand, not its last, and `asynchronous` is None: "
               "the entry's `committed` now covers it. False for anything else (the "
               "caller's slow path).")},
    {"clear", CursorClear, METH_NOARGS,
     PyDoc_STR("clear($self, /)\n--\n\nDrops the batch at hand: nothing is left to hand out.")},
    {"take", CursorTake, METH_O,
     PyDoc_STR("take($self, timeout, /)\n--\n\nThe next message of the batch at hand; None "
               "when none is left, after a fork(), or when `timeout` is not None or an int "
               "or float from 0 to max_timeout (the caller's slow path checks it).")},
    {"iterate", CursorIterate, METH_O,
     PyDoc_STR("iterate($self, refill, /)\n--\n\nAn endless iterator: the messages of the "
               "batch at hand, and when none is left, refill() until it returns a message "
               "(None: try again). Exceptions of refill() propagate.")},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef cursor_fields[] = {
    {"batch", GetBatch, nullptr, "The batch at hand (its messages maybe all handed out), or None.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot cursor_slots[] = {
    {Py_tp_doc, const_cast<char*>("MessageCursor(max_timeout)\n--\n\nThe batch a consumer "
                                  "hands out and the next message of it; len() is how many "
                                  "are left.")},
    {Py_tp_new, reinterpret_cast<void*>(CursorNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(CursorDealloc)},
    {Py_tp_methods, cursor_methods},
    {Py_tp_getset, cursor_fields},
    {Py_mp_length, reinterpret_cast<void*>(CursorLength)},
    {0, nullptr},
};

// Not GC-tracked: it holds a Batch, which holds no Python object, the facade's entry of
// it, which holds that Batch, its counts and its confirm context, and Messages, which
// hold a Batch: no cycle.
PyType_Spec cursor_spec = {
    "tubemq._core.MessageCursor", sizeof(CursorObject), 0, Py_TPFLAGS_DEFAULT, cursor_slots,
};

// --- MessageIterator: `for message in consumer` ---------------------------------------

PyObject* IteratorNext(PyObject* self) {
  IteratorObject* iterator = AsIterator(self);
  PyObject* cursor = iterator->cursor;
  PyObject* refill = iterator->refill;
  if (cursor == nullptr || refill == nullptr) return nullptr;  // cleared: exhausted
  // The common case, without references of its own: Take() touches the cursor no more
  // once it may have run other code.
  if (PyObject* message = Take(AsCursor(cursor))) return message;
  if (PyErr_Occurred()) return nullptr;
  // Held across refill(), which may run any Python code, drop the iterator's own
  // references (tp_clear) included.
  Py_INCREF(cursor);
  Py_INCREF(refill);
  PyObject* message = nullptr;
  for (;;) {
    message = PyObject_CallNoArgs(refill);  // waits with the GIL released, checks signals
    if (message != Py_None) break;          // a message, or NULL with the error set
    Py_DECREF(message);
    message = Take(AsCursor(cursor));       // what another caller of the cursor loaded
    if (message != nullptr || PyErr_Occurred()) break;
  }
  Py_DECREF(refill);
  Py_DECREF(cursor);
  return message;
}

int IteratorTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(AsIterator(self)->cursor);
  Py_VISIT(AsIterator(self)->refill);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int IteratorClear(PyObject* self) {
  Py_CLEAR(AsIterator(self)->cursor);
  Py_CLEAR(AsIterator(self)->refill);
  return 0;
}

void IteratorDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  IteratorClear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot iterator_slots[] = {
    {Py_tp_doc, const_cast<char*>("The messages a consumer hands out, endlessly "
                                  "(MessageCursor.iterate).")},
    {Py_tp_dealloc, reinterpret_cast<void*>(IteratorDealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(IteratorTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(IteratorClear)},
    {Py_tp_iter, reinterpret_cast<void*>(PyObject_SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(IteratorNext)},
    {0, nullptr},
};

// GC-tracked: refill is a bound method of the consumer, which user code may make hold
// the iterator.
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
constexpr unsigned kIteratorFlags =
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
#else
constexpr unsigned kIteratorFlags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
#endif

PyType_Spec iterator_spec = {
    "tubemq._core.MessageIterator", sizeof(IteratorObject), 0, kIteratorFlags, iterator_slots,
};

PyTypeObject* MakeType(PyType_Spec* spec, const char* name, py::module_& module) {
  PyObject* type = PyType_FromSpec(spec);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::reinterpret_borrow<py::object>(type));
  // The module keeps the type alive for as long as the process runs; the pointer
  // borrows that reference.
  Py_DECREF(type);
  return reinterpret_cast<PyTypeObject*>(type);
}

}  // namespace

void RegisterMessageCursor(py::module_& module) {
  MakeType(&cursor_spec, "MessageCursor", module);
  if (committed_name == nullptr) {
    committed_name = PyUnicode_InternFromString("committed");  // lives as long as the process
    if (committed_name == nullptr) throw py::error_already_set();
  }
  iterator_type = MakeType(&iterator_spec, "MessageIterator", module);
  iterator_type->tp_new = nullptr;  // what DISALLOW_INSTANTIATION does, for Python 3.9
  static const bool registered = [] {
    return pthread_atfork(nullptr, nullptr, NoteForkInChild) == 0;
  }();
  if (!registered) throw std::runtime_error("pthread_atfork failed");
}

}  // namespace tubemq::bindings
