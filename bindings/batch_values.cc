// Batch.values(): the values of a batch as one contiguous buffer plus int64 offsets
// (issue 18); no Python object is made per message. A fetch leaves the values one after
// another in the reply's buffer (consumer/fetch_reply.h), so `data` is a view of that
// buffer, without a copy; values that are not one run (a batch made some other way) are
// copied into one bytes object instead.
#include "batch_values.h"

#include <cstdint>
#include <cstring>
#include <memory>

namespace py = pybind11;

namespace tubemq::bindings {

const char* const kBatchValuesDoc =
    "(data, offsets): every message value concatenated in order, as a read-only "
    "memoryview, and len(batch) + 1 int64 offsets (a read-only memoryview of format 'q'); "
    "value i is data[offsets[i]:offsets[i + 1]]. Both own their memory: they stay valid "
    "after the batch is gone. Without a copy: numpy.frombuffer(offsets, dtype=numpy.int64), "
    "and pyarrow.Array.from_buffers(pyarrow.large_binary(), len(batch), [None, "
    "pyarrow.py_buffer(offsets), pyarrow.py_buffer(data)]).";

namespace {

// The values' run in the fetched buffer, kept alive by the batch's owner (not by the
// Batch object, which may be gone long before a numpy array made from the view).
struct ValuesRun {
  std::shared_ptr<const void> owner;
  const char* data = nullptr;
  size_t size = 0;
};

// The start of the values when they lie one after another in memory, else nullptr.
const char* OneRun(const ReceivedBatch& batch) {
  const char* start = nullptr;
  const char* next = nullptr;
  for (const auto& message : batch.messages) {
    if (message.body.empty()) continue;
    if (start == nullptr) start = message.body.data();
    else if (message.body.data() != next) return nullptr;
    next = message.body.data() + message.body.size();
  }
  return start;
}

}  // namespace

void RegisterValuesRun(py::module_& module) {
  py::class_<ValuesRun>(module, "_ValuesRun", py::buffer_protocol())
      .def_buffer([](ValuesRun& run) {
        return py::buffer_info(const_cast<char*>(run.data), static_cast<py::ssize_t>(run.size),
                               /*readonly=*/true);
      });
}

py::tuple BatchValues(const ReceivedBatch& batch) {
  const size_t count = batch.messages.size();
  size_t total = 0;
  for (const auto& message : batch.messages) total += message.body.size();
  const char* run = batch.owner ? OneRun(batch) : nullptr;
  const auto offsets_size = static_cast<py::ssize_t>((count + 1) * sizeof(int64_t));
  auto offsets =
      py::reinterpret_steal<py::bytes>(PyBytes_FromStringAndSize(nullptr, offsets_size));
  if (!offsets) throw py::error_already_set();
  char* ends = PyBytes_AS_STRING(offsets.ptr());
  // Copied into a bytes object only when the values are not one run already; either
  // way `data` keeps its memory alive without the batch.
  py::object data;
  char* out = nullptr;
  if (run != nullptr) {
    data = py::cast(ValuesRun{batch.owner, run, total});
  } else {
    data = py::reinterpret_steal<py::bytes>(
        PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(total)));
    if (!data) throw py::error_already_set();
    out = PyBytes_AS_STRING(data.ptr());
  }
  {
    // The caller's reference to the batch keeps its bytes alive meanwhile.
    py::gil_scoped_release release;
    int64_t position = 0;
    std::memcpy(ends, &position, sizeof position);
    for (size_t i = 0; i < count; ++i) {
      const auto& body = batch.messages[i].body;
      if (out != nullptr && !body.empty()) std::memcpy(out + position, body.data(), body.size());
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
