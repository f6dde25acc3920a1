// Batch.arrow_columns(): a fetched batch laid out as Arrow buffers, without a Python
// object per message (design.md §5).
#include "arrow_columns.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "errors.h"
#include "tubemq/utf8.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

// Arrow-layout buffers of a batch's string column: int32 offsets (count + 1) and the
// concatenated bytes; a validity bitmap when some entries are absent (empty).
//
// Arrow and Spark strings are UTF-8 by definition, and Spark trusts them to be, but
// msgType and attributes are whatever bytes a producer wrote: each ill-formed sequence
// goes in as U+FFFD (one per maximal subpart, as Python's "replace" shows it; the Java
// client too shows U+FFFD). Well-formed text is copied unchanged, after one scan.
struct StringColumn {
  std::string offsets;
  std::string data;
  std::string validity;  // empty: every entry present
  int64_t nulls = 0;

  void Reserve(size_t count) { offsets.reserve((count + 1) * sizeof(int32_t)); }
  void AppendOffset() {
    const auto end = static_cast<int32_t>(data.size());
    offsets.append(reinterpret_cast<const char*>(&end), sizeof end);
  }
  void Add(std::string_view value) {
    AppendUtf8Replacing(value, data);
    AppendOffset();
  }
  // For text already known to be well-formed.
  void AddValid(std::string_view value) {
    data.append(value);
    AppendOffset();
  }
  // An empty value counts as absent (null), as Message.msg_type / msg_time say None.
  void AddOptional(std::string_view value, size_t index, size_t count) {
    if (value.empty()) {
      if (validity.empty()) validity.assign((count + 7) / 8, static_cast<char>(0xff));
      validity[index / 8] = static_cast<char>(validity[index / 8] & ~(1 << (index % 8)));
      ++nulls;
    }
    Add(value);
  }
  py::tuple ToPython() const {
    return py::make_tuple(py::bytes(offsets), py::bytes(data),
                          validity.empty() ? py::object(py::none()) : py::bytes(validity), nulls);
  }
};

}  // namespace

// The batch as Arrow buffers, built without a Python object per message (design.md §5):
// (count, values, message_ids, msg_types, msg_times, (attr_offsets, keys, items)), where
// each string column is (offsets, data, validity or None, null count) and message_ids
// is little-endian int64s. Each value is copied once, into `values`' data.
py::tuple ArrowColumns(const ReceivedBatch& batch) {
  const size_t count = batch.messages.size();
  size_t body_bytes = 0, pairs = 0;
  for (const auto& message : batch.messages) {
    body_bytes += message.body.size();
    // At most one pair per item: a bound for the reservations, without parsing.
    if (!message.attribute.empty()) {
      pairs += 1 + static_cast<size_t>(
                       std::count(message.attribute.begin(), message.attribute.end(), ','));
    }
  }
  if (body_bytes > static_cast<size_t>(INT32_MAX)) {
    ThrowStatus(Status(ErrorCode::kInvalidArgument, "batch too large for 32-bit Arrow offsets"));
  }
  // The values go straight from the fetched bytes into the Python object Arrow wraps.
  auto body = py::reinterpret_steal<py::bytes>(
      PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(body_bytes)));
  if (!body) throw py::error_already_set();
  char* out = PyBytes_AS_STRING(body.ptr());
  std::string value_offsets;
  StringColumn types, times, keys, items;
  std::string ids, attr_offsets;
  WithoutGil([&] {
    value_offsets.reserve((count + 1) * sizeof(int32_t));
    int32_t position = 0;
    value_offsets.append(reinterpret_cast<const char*>(&position), sizeof position);
    for (const auto& message : batch.messages) {
      std::memcpy(out + position, message.body.data(), message.body.size());
      position += static_cast<int32_t>(message.body.size());
      value_offsets.append(reinterpret_cast<const char*>(&position), sizeof position);
    }
    types.Reserve(count);
    times.Reserve(count);
    keys.Reserve(pairs);
    items.Reserve(pairs);
    ids.reserve(count * sizeof(int64_t));
    for (StringColumn* column : {&types, &times, &keys, &items}) column->AppendOffset();
    int32_t pair_count = 0;
    attr_offsets.append(reinterpret_cast<const char*>(&pair_count), sizeof pair_count);
    // A message's attribute keys as the column shows them: views of the fetched keys, or
    // of their replaced form in `replaced` (a deque: its strings never move).
    std::vector<std::string_view> shown;
    std::deque<std::string> replaced;
    for (size_t index = 0; index < count; ++index) {
      const auto& message = batch.messages[index];
      const int64_t id = message.message_id;
      ids.append(reinterpret_cast<const char*>(&id), sizeof id);
      types.AddOptional(message.msg_type, index, count);
      times.AddOptional(message.msg_time, index, count);
      const auto properties = message.Properties();
      shown.clear();
      replaced.clear();
      for (const auto& property : properties) {
        if (IsValidUtf8(property.first)) {
          shown.emplace_back(property.first);
        } else {
          AppendUtf8Replacing(property.first, replaced.emplace_back());
          shown.emplace_back(replaced.back());
        }
      }
      for (size_t at = 0; at < properties.size(); ++at) {
        // A key given twice keeps its last value, as Message.attrs (a dict) does. Keys
        // are compared as shown, so that two bad keys that both read as U+FFFD cannot
        // put one key into a map twice (Spark refuses such maps).
        bool repeated = false;
        for (size_t later = at + 1; later < properties.size() && !repeated; ++later) {
          repeated = shown[later] == shown[at];
        }
        if (repeated) continue;
        keys.AddValid(shown[at]);
        items.Add(properties[at].second);
        ++pair_count;
      }
      attr_offsets.append(reinterpret_cast<const char*>(&pair_count), sizeof pair_count);
    }
  });
  py::tuple values = py::make_tuple(py::bytes(value_offsets), body, py::none(), 0);
  return py::make_tuple(count, values, py::bytes(ids), types.ToPython(),
                        times.ToPython(),
                        py::make_tuple(py::bytes(attr_offsets), keys.ToPython(), items.ToPython()));
}

}  // namespace tubemq::bindings
