// What other binding files need of producer.cc: the native producer behind a
// tubemq._core.Producer object, and its one way of queueing an asynchronous send.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

#include "tubemq/message.h"

namespace tubemq::bindings {

class PyProducer;

// The C++ object of a tubemq._core.Producer; throws pybind11::cast_error for anything else.
PyProducer& ProducerOf(pybind11::handle object);

// False once the core cannot send: it failed to construct, or it was inherited through
// fork(). (Closing is the facade's to know.)
bool CanSend(const PyProducer& producer);

// The native half of Producer.send_async(): takes a place in the window (waiting when
// `block`, else raising QueueFullError) and queues `message`, whose outcome arrives
// under `token`. With the GIL held; releases it around the native locks.
void QueueSend(PyProducer& producer, OutgoingMessage message, uint64_t token, bool block);

}  // namespace tubemq::bindings
