// Batch.values(): a fetched batch's message values as one buffer plus offsets, for numpy
// and Arrow readers that want the values without a Python object per message.
#pragma once

#include <pybind11/pybind11.h>

#include "tubemq/consumer.h"

namespace tubemq::bindings {

// (data, offsets): `data` a read-only memoryview of every value concatenated in order,
// `offsets` a read-only memoryview of len(batch) + 1 native int64s (format 'q'); value i
// is data[offsets[i]:offsets[i + 1]].
pybind11::tuple BatchValues(const ReceivedBatch& batch);

// The type of `data` when it is a view of the fetched buffer; registered before Batch.
void RegisterValuesRun(pybind11::module_& module);

extern const char* const kBatchValuesDoc;

}  // namespace tubemq::bindings
