// Settling a drained batch of send outcomes against the delivery tracker's tables, in one
// native pass with the GIL and the tracker's lock held (tubemq/_delivery.py says when).
//
// A handle only the tracker's table refers to cannot be looked at by anyone: nobody
// holds it, no done-callback or concurrent.futures waiter was registered for it. Such a
// send, when it has no delivery callback either, is settled by forgetting it at once (no
// SendResult is made, and the pass that forgets the batch after its callbacks passes it
// by). Everything else is settled as a Future would be.
#include "delivery_batch.h"

#include <cstdint>
#include <utility>

#include "send_handle.h"
#include "text.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

// The outcomes of a batch one at a time, from a native DeliveryBatch or from a Python
// sequence of (token, code, text, SendResult or None) tuples: what close() fails itself,
// and what stand-ins for the native producer hand out in tests. One settling pass for both.
class Outcomes {
 public:
  explicit Outcomes(py::handle batch) {
    if (py::isinstance<DeliveryBatch>(batch)) {
      native_ = &batch.cast<DeliveryBatch&>();
    } else {
      tuples_ = py::reinterpret_borrow<py::sequence>(batch);
    }
  }

  size_t size() const { return native_ ? native_->items.size() : tuples_.size(); }

  uint64_t token(size_t i) const {
    return native_ ? native_->items[i].token : Tuple(i)[0].cast<uint64_t>();
  }

  bool Succeeded(size_t i) const {
    return native_ ? native_->items[i].status.ok() : !Tuple(i)[3].is_none();
  }

  // Settling dropped it from the table already (a native outcome remembers; for a tuple,
  // forgetting it again finds nothing, which is not an error).
  void Forgotten(size_t i) {
    if (native_) native_->items[i].forgotten = true;
  }
  bool IsForgotten(size_t i) const { return native_ && native_->items[i].forgotten; }

  // Made at most once per outcome: a native SendResult is moved into its Python object.
  struct Outcome {
    bool succeeded;
    int code;
    py::object text;
    py::object result;  // None unless succeeded
  };
  Outcome Take(size_t i) {
    if (native_) {
      Delivery& item = native_->items[i];
      if (item.status.ok()) return {true, 0, py::str(), py::cast(item.TakeResult())};
      return {false, item.status.code_value(), DiagnosticText(item.status.message()), py::none()};
    }
    py::tuple item = Tuple(i);
    py::object result = item[3];
    return {!result.is_none(), item[1].cast<int>(), item[2], result};
  }

 private:
  py::tuple Tuple(size_t i) const { return tuples_[i].cast<py::tuple>(); }

  DeliveryBatch* native_ = nullptr;
  py::sequence tuples_;
};

// table.pop(key, None), as an empty object when absent.
py::object Pop(const py::dict& table, const py::object& key) {
  if (PyDict_GET_SIZE(table.ptr()) == 0) return py::object();
  PyObject* value = PyDict_GetItemWithError(table.ptr(), key.ptr());  // borrowed
  if (value == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return py::object();
  }
  py::object kept = py::reinterpret_borrow<py::object>(value);
  if (PyDict_DelItem(table.ptr(), key.ptr()) != 0) throw py::error_already_set();
  return kept;
}

py::object OrNone(py::object value) { return value ? std::move(value) : py::none(); }

// Records the outcomes of `batch` for the sends `pending` still holds (token to handle,
// or to None for a send without one); returns what must run once the lock is let go,
// as (handle, done-callbacks, delivery callback, code, text, SendResult or None) tuples,
// how many of the batch's sends stay pending until then, and how many failed with nobody
// to tell (no callback, no handle anyone holds) with the (code, text) of the first, or
// None: the tracker logs those, since no one else will hear of them. Those keep their entries:
// they go only after the callbacks ran (forget_deliveries), so that flush() waits for
// them. A send nobody can observe, with no callback, goes now: one lookup, not two.
py::tuple SettleDeliveries(py::handle batch, const py::dict& pending, const py::dict& callbacks,
                           const py::dict& waiters, const py::dict& done_callbacks) {
  Outcomes outcomes(batch);
  py::list work;
  size_t settling = 0;
  size_t unseen_failures = 0;         // failed sends nobody can be told of
  py::object first_unseen = py::none();  // (code, text) of the first of them
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const py::object key = py::int_(outcomes.token(i));
    PyObject* handle = PyDict_GetItemWithError(pending.ptr(), key.ptr());  // borrowed
    if (handle == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      continue;  // completed already (by close()) or never queued
    }
    // Read before this function takes a reference of its own.
    const bool held_elsewhere = Py_REFCNT(handle) > 1;
    const py::object kept = py::reinterpret_borrow<py::object>(handle);
    py::object callback = Pop(callbacks, key);
    py::object done;
    py::object waiting;
    bool observed = false;
    if (handle != Py_None) {
      if (!IsSendHandle(handle)) throw py::type_error("a pending send's entry is not a SendHandle");
      done = Pop(done_callbacks, key);
      waiting = Pop(waiters, key);
      observed = held_elsewhere || done || waiting;
    }
    if (!observed && !callback) {
      if (PyDict_DelItem(pending.ptr(), key.ptr()) != 0) throw py::error_already_set();
      outcomes.Forgotten(i);
      if (!outcomes.Succeeded(i)) {
        if (unseen_failures++ == 0) {
          Outcomes::Outcome outcome = outcomes.Take(i);
          first_unseen = py::make_tuple(outcome.code, outcome.text);
        }
      }
      continue;
    }
    ++settling;
    Outcomes::Outcome outcome = outcomes.Take(i);
    if (observed) {
      CompleteSendHandle(handle, outcome.succeeded, outcome.code,
                         outcome.succeeded ? outcome.result.ptr() : outcome.text.ptr());
      if (waiting) {
        const char* method = outcome.succeeded ? "add_result" : "add_exception";
        for (py::handle waiter : waiting) waiter.attr(method)(kept);
      }
    }
    if (done || callback) {
      work.append(py::make_tuple(kept, done ? std::move(done) : py::list(), OrNone(callback),
                                 outcome.code, outcome.text, outcome.result));
    }
  }
  return py::make_tuple(std::move(work), settling, unseen_failures, std::move(first_unseen));
}

// Drops the batch's sends from `pending`: their outcomes are settled and their callbacks ran.
void ForgetDeliveries(py::handle batch, const py::dict& pending) {
  Outcomes outcomes(batch);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes.IsForgotten(i)) continue;
    const py::object key = py::int_(outcomes.token(i));
    if (PyDict_DelItem(pending.ptr(), key.ptr()) != 0) {
      if (!PyErr_ExceptionMatches(PyExc_KeyError)) throw py::error_already_set();
      PyErr_Clear();
    }
  }
}

}  // namespace

void RegisterDeliveryBatch(py::module_& module) {
  py::class_<DeliveryBatch>(module, "DeliveryBatch",
                            "Send outcomes drained from a native producer, not yet settled.")
      .def("__len__", [](const DeliveryBatch& batch) { return batch.items.size(); });
  module.def("settle_deliveries", &SettleDeliveries, py::arg("batch"), py::arg("pending"),
             py::arg("callbacks"), py::arg("waiters"), py::arg("done_callbacks"),
             "Settles a batch against the tracker's tables; returns (work, settling, "
             "unseen_failures, first_unseen).");
  module.def("forget_deliveries", &ForgetDeliveries, py::arg("batch"), py::arg("pending"),
             "Drops a settled batch's sends from the pending table.");
}

}  // namespace tubemq::bindings
