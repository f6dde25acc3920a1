// A fetched batch as Arrow buffers, for the Spark source and other columnar readers.
#pragma once

#include <pybind11/pybind11.h>

#include "tubemq/consumer.h"

namespace tubemq::bindings {

// (count, values, message_ids, msg_types, msg_times, (attr_offsets, keys, items)): each
// string column is (offsets, data, validity or None, null count) and message_ids is
// little-endian int64s (tubemq.spark._arrow assembles the arrays).
pybind11::tuple ArrowColumns(const ReceivedBatch& batch);

}  // namespace tubemq::bindings
