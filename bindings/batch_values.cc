// Batch.values(): the values of a batch as one contiguous buffer plus int64 offsets
// (issue 18). The values are copied once, from the fetched bytes (where headers separate
// them) into one bytes object; no Python object is made per message.
#include "batch_values.h"

#include <cstdint>
#include <cstring>

namespace py = pybind11;

namespace tubemq::bindings {

const char* const kBatchValuesDoc =
    "(data, offsets): every message value concatenated in order, as a read-only "
    "memoryview, and len(batch) + 1 int64 offsets (a read-only memoryview of format 'q'); "
    "value i is data[offsets[i]:offsets[i + 1]]. Both own their memory: they stay valid "
    "after the batch is gone. Without a copy: numpy.frombuffer(offsets, dtype=numpy.int64), "
    "and pyarrow.Array.from_buffers(pyarrow.large_binary(), len(batch), [None, "
    "pyarrow.py_buffer(offsets), pyarrow.py_buffer(data)]).";

py::tuple BatchValues(const ReceivedBatch& batch) {
  const size_t count = batch.messages.size();
  size_t total = 0;
  for (const auto& message : batch.messages) total += message.body.size();
  // Both buffers are bytes objects written in place: a memoryview of one keeps it, and
  // so the data, alive without the batch.
  auto data = py::reinterpret_steal<py::bytes>(
      PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(total)));
  if (!data) throw py::error_already_set();
  const auto offsets_size = static_cast<py::ssize_t>((count + 1) * sizeof(int64_t));
  auto offsets =
      py::reinterpret_steal<py::bytes>(PyBytes_FromStringAndSize(nullptr, offsets_size));
  if (!offsets) throw py::error_already_set();
  char* out = PyBytes_AS_STRING(data.ptr());
  char* ends = PyBytes_AS_STRING(offsets.ptr());
  {
    // The caller's reference to the batch keeps its bytes alive while we copy.
    py::gil_scoped_release release;
    int64_t position = 0;
    std::memcpy(ends, &position, sizeof position);
    for (size_t i = 0; i < count; ++i) {
      const auto& body = batch.messages[i].body;
      if (!body.empty()) std::memcpy(out + position, body.data(), body.size());
      position += static_cast<int64_t>(body.size());
      std::memcpy(ends + (i + 1) * sizeof(int64_t), &position, sizeof position);
    }
  }
  // memoryview(bytes) is read-only; cast("q") gives the offsets their type for numpy and
  // for indexing from Python, and keeps the bytes as its base.
  py::object offsets_view = py::memoryview(offsets).attr("cast")("q");
  return py::make_tuple(py::memoryview(data), offsets_view);
}

}  // namespace tubemq::bindings
