// Batch.values(): the values of a batch as one contiguous buffer plus int64 offsets
// (issue 18); no Python object is made per message. A fetch leaves the values one after
// another in the reply's buffer (consumer/fetch_reply.h), so `data` is a view of that
// buffer, without a copy; values that are not one run (a batch made some other way) are
// copied into one bytes object instead.
#include "batch_values.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "wait.h"

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

// Where each value ends, as int64s of format 'q': numpy and memoryview indexing read the
// type from the buffer itself, so no cast is made per call.
struct ValueOffsets {
  std::vector<int64_t> ends;
};

}  // namespace

void RegisterValuesRun(py::module_& module) {
  py::class_<ValuesRun>(module, "_ValuesRun", py::buffer_protocol())
      .def_buffer([](ValuesRun& run) {
        return py::buffer_info(const_cast<char*>(run.data), static_cast<py::ssize_t>(run.size),
                               /*readonly=*/true);
      });
  py::class_<ValueOffsets>(module, "_ValueOffsets", py::buffer_protocol())
      .def_buffer([](ValueOffsets& offsets) {
        return py::buffer_info(offsets.ends.data(), static_cast<py::ssize_t>(sizeof(int64_t)),
                               "q", static_cast<py::ssize_t>(offsets.ends.size()),
                               /*readonly=*/true);
      });
}

py::tuple BatchValues(const ReceivedBatch& batch) {
  // One pass: the offsets, and whether the values lie one after another in memory (as a
  // fetch leaves them), so that `data` can be a view of the fetched buffer.
  ValueOffsets offsets;
  offsets.ends.reserve(batch.messages.size() + 1);
  offsets.ends.push_back(0);
  int64_t position = 0;
  const char* start = nullptr;
  const char* next = nullptr;
  bool one_run = batch.owner != nullptr;
  for (const auto& message : batch.messages) {
    const std::string_view body = message.body;
    if (!body.empty()) {
      if (start == nullptr) start = body.data();
      else if (body.data() != next) one_run = false;
      next = body.data() + body.size();
    }
    position += static_cast<int64_t>(body.size());
    offsets.ends.push_back(position);
  }
  const auto total = static_cast<size_t>(position);
  py::object data;
  if (one_run && start != nullptr) {
    data = py::cast(ValuesRun{batch.owner, start, total});
  } else {
    // Values from elsewhere (a batch not made by a fetch): copied into one bytes object,
    // which keeps its memory alive without the batch.
    auto copy = py::reinterpret_steal<py::bytes>(
        PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(total)));
    if (!copy) throw py::error_already_set();
    char* out = PyBytes_AS_STRING(copy.ptr());
    WithoutGil([&] {
      // The caller's reference to the batch keeps its bytes alive meanwhile.
      for (const auto& message : batch.messages) {
        if (message.body.empty()) continue;
        std::memcpy(out, message.body.data(), message.body.size());
        out += message.body.size();
      }
    });
    data = std::move(copy);
  }
  return py::make_tuple(py::memoryview(data), py::memoryview(py::cast(std::move(offsets))));
}

}  // namespace tubemq::bindings
