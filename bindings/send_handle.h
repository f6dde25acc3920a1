// What other binding files need of send_handle.cc: recognising a SendHandle and
// recording its outcome. The type is made in one place (send_handle.cc).
#pragma once

#include <Python.h>

namespace tubemq::bindings {

// True for an instance of tubemq._core.SendHandle.
bool IsSendHandle(PyObject* object);

// A new pending handle of `type`, as `type(owner, token)` makes it; without parsing
// arguments when `type` is SendHandle (the send path makes one per send).
PyObject* NewSendHandle(PyObject* type, PyObject* owner, unsigned long long token);

// Records a handle's outcome: `succeeded` with `outcome` its SendResult, or failed with
// error `code` and `outcome` the error's text. The status is written last: result()
// reads it without a lock, then the outcome. With the GIL held.
void CompleteSendHandle(PyObject* handle, bool succeeded, int code, PyObject* outcome);

}  // namespace tubemq::bindings
