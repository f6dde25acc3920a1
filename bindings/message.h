// What other binding files need of message.cc: making a Message. The Message type is
// made in one place (message.cc); others only ask for instances.
#pragma once

#include <Python.h>

#include "tubemq/consumer.h"

namespace tubemq::bindings {

// A new Message (a new reference) for message `index` of `data`, which is the C++ object
// of the Batch `batch`; the message holds a reference to `batch`. NULL with a Python
// error set when out of memory.
PyObject* NewMessage(PyObject* batch, const ReceivedBatch* data, Py_ssize_t index);

// Points `message`, a Message nobody else holds, at message `index` of `data` (the C++
// object of the Batch `batch`), as NewMessage would have made it: a hand-out reuses the
// Message its caller dropped instead of freeing one and allocating the next.
void ReuseMessage(PyObject* message, PyObject* batch, const ReceivedBatch* data,
                  Py_ssize_t index);

// Where `object` is, if it is a Message: its Batch (borrowed) and its index there.
// False, with no error set, for anything else.
bool MessagePlace(PyObject* object, PyObject** batch, Py_ssize_t* index);

// The C++ object of a Batch; throws pybind11::cast_error for anything else.
const ReceivedBatch& BatchData(PyObject* batch);

}  // namespace tubemq::bindings
