// The one way the bindings wait for the core: with the GIL released, in slices of at
// most 50 ms, checking for signals between slices so that Ctrl-C interrupts any
// blocking call promptly (design.md §2).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "errors.h"
#include "tubemq/status.h"

namespace tubemq::bindings {

inline constexpr std::chrono::milliseconds kWaitSlice{50};

// Destructors of native clients release the GIL while they wait for the core, except
// during interpreter shutdown, when the GIL must not be touched.
inline bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Runs `work` with the GIL released and takes the GIL back outside any destructor.
// A daemon thread that takes the GIL back while the interpreter finalizes is ended by
// pthread_exit(), a forced unwind; unwinding through a noexcept frame such as the
// destructor of py::gil_scoped_release calls std::terminate ("terminate called without
// an active exception" at exit, with a daemon thread inside a native wait). Here the
// unwind passes ordinary frames only, and pybind11 lets it through.
template <typename Work>
auto WithoutGil(Work&& work) -> decltype(work()) {
  using Result = decltype(work());
  std::exception_ptr failure;
  PyThreadState* const state = PyEval_SaveThread();
  if constexpr (std::is_void_v<Result>) {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (failure) std::rethrow_exception(failure);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(work());
    } catch (...) {
      failure = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
  }
}

// Whether this thread is one that interpreter finalization may end: a daemon thread, or
// one Python did not start. Finalization waits for the main thread and for every other
// thread. Called with the GIL held. It reads threading's own table of live threads
// (ident -> Thread, and the Thread's _daemonic flag) and runs no Python code: code may
// let the GIL go, and taking it back is the very hazard this avoids. Anything missing
// or failing answers true, the careful answer.
inline bool FinalizationMayEndThisThread() {
  PyObject* error_type = nullptr;
  PyObject* error_value = nullptr;
  PyObject* error_traceback = nullptr;
  PyErr_Fetch(&error_type, &error_value, &error_traceback);  // a destructor may run
  int may_end = 1;                                          // while one is raised
  PyObject* name = PyUnicode_FromString("threading");
  PyObject* threading = name != nullptr ? PyImport_GetModule(name) : nullptr;
  Py_XDECREF(name);
  if (threading != nullptr) {
    PyObject* active = PyObject_GetAttrString(threading, "_active");
    PyObject* ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (active != nullptr && ident != nullptr && PyDict_Check(active)) {
      if (PyObject* thread = PyDict_GetItemWithError(active, ident)) {  // borrowed
        if (PyObject* daemonic = PyObject_GetAttrString(thread, "_daemonic")) {
          if (PyBool_Check(daemonic)) may_end = daemonic == Py_True;
          Py_DECREF(daemonic);
        }
      }
    }
    Py_XDECREF(ident);
    Py_XDECREF(active);
    Py_DECREF(threading);
  }
  PyErr_Clear();
  PyErr_Restore(error_type, error_value, error_traceback);
  return may_end != 0;
}

// Destroys a native client, which may wait for its close (up to about 1.5 s for one
// dropped without close()), from a destructor called with the GIL held. It lets the GIL
// go for the wait only where taking it back is safe. A thread that takes the GIL back
// after finalization began is ended by pthread_exit(), a forced unwind, and unwinding
// through a destructor (always noexcept) calls std::terminate: "terminate called
// without an active exception" at exit, when a daemon thread dropped the last
// reference to a client as the interpreter exited. Such a thread, and every thread
// once finalization began, destroys the client with the GIL held.
template <typename Client>
void DestroyClient(std::unique_ptr<Client>& client) {
  if (!client) return;
  if (Py_IsInitialized() && !InterpreterFinalizing() && !FinalizationMayEndThisThread()) {
    pybind11::gil_scoped_release release;
    client.reset();
  } else {
    client.reset();
  }
}

// The loop every blocking call of the bindings waits in. `attempt(slice)` waits at
// most `slice` (with the GIL released) and says whether it is done; between attempts
// a signal raises the pending Python exception (KeyboardInterrupt). Returns whether an
// attempt succeeded before `deadline` (none: no bound) passed.
template <typename Attempt>
bool WaitInSlices(std::optional<std::chrono::steady_clock::time_point> deadline,
                  Attempt&& attempt) {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    auto slice = kWaitSlice;
    if (deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      slice = std::max(std::chrono::milliseconds(0), std::min(slice, left));
    }
    if (attempt(slice)) return true;
    if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
    if (deadline && Clock::now() >= *deadline) return false;
  }
}

// Waits until `future` is ready or `deadline` passes; returns whether it is ready.
template <typename T>
bool WaitUntil(std::future<T>& future,
               std::optional<std::chrono::steady_clock::time_point> deadline) {
  return WaitInSlices(deadline, [&](std::chrono::milliseconds slice) {
    return WithoutGil([&] { return future.wait_for(slice); }) == std::future_status::ready;
  });
}

// The deadline `timeout_s` seconds from now; none for None. The facade refuses
// timeouts that are not positive and finite, or above a year; this bound only keeps a
// direct caller of _core from overflowing the clock (no deadline is then as good).
inline std::optional<std::chrono::steady_clock::time_point> DeadlineAfter(
    std::optional<double> timeout_s) {
  using Clock = std::chrono::steady_clock;
  constexpr double kNoBoundAbove = 1e9;  // seconds, about 31 years
  if (!timeout_s || !(*timeout_s < kNoBoundAbove)) return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, *timeout_s)));
}

// Waits for `future`; `timeout_s` of None waits for as long as it takes. Raises the
// pending Python exception on a signal (KeyboardInterrupt), TimeoutError on timeout.
template <typename T>
T WaitFor(std::future<T>& future, std::optional<double> timeout_s, const char* what) {
  if (!WaitUntil(future, DeadlineAfter(timeout_s))) {
    ThrowStatus(Status(ErrorCode::kRequestTimeout,
                       std::string(what) + " did not complete within " +
                           std::to_string(*timeout_s) + " s"));
  }
  return future.get();
}

}  // namespace tubemq::bindings
