// tubemq._core.Consumer, Batch and Message. Polls wait in short slices with the GIL
// released and signals checked between them; message values are exposed through the
// buffer protocol as views into the fetched bytes (no copy).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "errors.h"
#include "text.h"
#include "tubemq/consumer.h"
#include "tubemq/utf8.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

bool NothingNow(ErrorCode code) {
  return code == ErrorCode::kNotFound || code == ErrorCode::kNoPartitionAssigned ||
         code == ErrorCode::kAllPartitionWaiting || code == ErrorCode::kAllPartitionInUse;
}

// One message of a batch; keeps the batch (and so its bytes) alive.
struct PyMessage {
  std::shared_ptr<const ReceivedBatch> batch;
  size_t index = 0;
  const ReceivedMessage& message() const { return batch->messages[index]; }
};

ConsumePosition ParsePosition(const std::string& text) {
  if (text == "earliest") return ConsumePosition::kEarliest;
  if (text == "latest") return ConsumePosition::kLatest;
  if (text == "max_always") return ConsumePosition::kMaxAlways;
  ThrowStatus(Status(ErrorCode::kInvalidArgument,
                     "consume_from must be 'earliest', 'latest' or 'max_always', got '" + text +
                         "'"));
  return ConsumePosition::kLatest;
}

class PyConsumer {
 public:
  PyConsumer(const ClientConfig& config, ConsumerOptions options)
      : consumer_(std::make_unique<Consumer>(config, std::move(options))) {
    Check(consumer_->Usable());
  }
  ~PyConsumer() {
    if (Py_IsInitialized() && !InterpreterFinalizing()) {
      py::gil_scoped_release release;
      consumer_.reset();
    } else {
      consumer_.reset();
    }
  }

  void Start(std::optional<double> timeout) {
    auto future = consumer_->Start();
    Check(WaitFor(future, timeout, "consumer start"));
  }

  // A batch, or None when nothing arrived within `timeout` seconds.
  std::optional<std::shared_ptr<const ReceivedBatch>> Poll(double timeout) {
    std::shared_ptr<ReceivedBatch> batch;
    const bool arrived = WaitInSlices(DeadlineAfter(timeout), [&](std::chrono::milliseconds slice) {
      batch = std::make_shared<ReceivedBatch>();
      const Status status = WithoutGil([&] { return consumer_->Poll(slice, *batch); });
      if (!status.ok() && !NothingNow(status.code())) ThrowStatus(status);
      return status.ok();
    });
    if (!arrived) return std::nullopt;
    return std::shared_ptr<const ReceivedBatch>(std::move(batch));
  }

  // Client-balanced mode: each call blocks for at most a few RPC timeouts.
  std::vector<PartitionStatus> QueryPartitions(bool refresh) {
    std::vector<PartitionStatus> out;
    const Status status = WithoutGil([&] { return consumer_->QueryPartitions(refresh, out); });
    Check(status);
    return out;
  }

  // Partition keys and confirm contexts come back as WireString: they are names the
  // server gave, in the form WireText handed them out.
  void Assign(const WireString& key, int64_t offset) {
    const Status status = WithoutGil([&] { return consumer_->Assign(key.bytes, offset); });
    Check(status);
  }

  void Unassign(const WireString& key, bool commit) {
    const Status status = WithoutGil([&] { return consumer_->Unassign(key.bytes, commit); });
    Check(status);
  }

  void Confirm(const WireString& context, bool consumed) {
    const Status status =
        WithoutGil([&] { return consumer_->Confirm(context.bytes, consumed); });
    Check(status);
  }

  void Close(std::optional<double> timeout) {
    auto future = consumer_->Close();
    Status status = WaitFor(future, timeout, "consumer close");
    WithoutGil([&] { consumer_->ReleaseService(); });
    Check(status);
  }

  Consumer& native() { return *consumer_; }

 private:
  std::unique_ptr<Consumer> consumer_;
};

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

// The batch as Arrow buffers, built without a Python object per message (design.md §5):
// (count, values, message_ids, msg_types, msg_times, (attr_offsets, keys, items)), where
// each string column is (offsets, data, validity or None, null count) and message_ids
// is little-endian int64s. Each value is copied once, into `values`' data.
py::tuple ArrowColumns(const ReceivedBatch& batch) {
  const size_t count = batch.messages.size();
  size_t body_bytes = 0, pairs = 0;
  for (const auto& message : batch.messages) {
    body_bytes += message.body.size();
    pairs += message.properties.size();
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
  {
    py::gil_scoped_release release;
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
      const auto& properties = message.properties;
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
  }
  py::tuple values = py::make_tuple(py::bytes(value_offsets), body, py::none(), 0);
  return py::make_tuple(count, values, py::bytes(ids), types.ToPython(),
                        times.ToPython(),
                        py::make_tuple(py::bytes(attr_offsets), keys.ToPython(), items.ToPython()));
}

// msgType / msgTime: None when the message has none.
py::object OptionalText(const std::string& text) {
  return text.empty() ? py::object(py::none()) : py::object(WireText(text));
}

py::list TextList(const std::vector<std::string>& names) {
  py::list out;
  for (const std::string& name : names) out.append(WireText(name));
  return out;
}

// Message(topic='demo', partition_key='1:demo:0', message_id=42, value=b'abc' (3 bytes)):
// the value cut to its first bytes, so that printing a message never floods a log.
py::str MessageRepr(const PyMessage& self) {
  constexpr size_t kShown = 20;
  const std::string_view body = self.message().body;
  const std::string_view head = body.substr(0, kShown);
  return py::str("Message(topic={!r}, partition_key={!r}, message_id={}, value={!r}{} ({} "
                 "bytes))")
      .format(WireText(self.batch->topic), WireText(self.batch->partition_key),
              self.message().message_id, py::bytes(head.data(), head.size()),
              body.size() > kShown ? "..." : "", body.size());
}

}  // namespace

void RegisterConsumer(py::module_& module) {
  py::class_<PyMessage>(module, "Message", py::buffer_protocol(),
                        "A received message; its bytes are the buffer (memoryview(msg)).")
      .def_buffer([](PyMessage& self) {
        const std::string_view body = self.message().body;
        return py::buffer_info(const_cast<char*>(body.data()), 1,
                               py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(body.size())}, {1}, /*readonly=*/true);
      })
      .def_property_readonly(
          "value",
          [](py::object self) {
            // A view over the message itself: it exports the fetched bytes through the
            // buffer protocol and holds the batch, so the bytes live as long as the view.
            PyObject* view = PyMemoryView_FromObject(self.ptr());
            if (view == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::memoryview>(view);
          },
          "The value as a read-only memoryview of the fetched bytes (no copy); it keeps "
          "the batch alive.")
      .def_property_readonly("message_id", [](const PyMessage& self) {
        return self.message().message_id;
      })
      .def_property_readonly("index", [](const PyMessage& self) { return self.index; },
                             "Position of the message in its batch (0 for the first).")
      .def_property_readonly("topic",
                             [](const PyMessage& self) { return WireText(self.batch->topic); })
      .def_property_readonly(
          "partition_key", [](const PyMessage& self) { return WireText(self.batch->partition_key); })
      .def_property_readonly("batch_offset", [](const PyMessage& self) { return self.batch->offset; })
      .def_property_readonly("confirm_context", [](const PyMessage& self) {
        return WireText(self.batch->confirm_context);
      })
      // Text fields are as the producer wrote them, decoded by WireText: never raises,
      // and .encode("utf-8", "surrogateescape") gives the bytes back (docs/consumers.md).
      .def_property_readonly(
          "msg_type", [](const PyMessage& self) { return OptionalText(self.message().msg_type); },
          "The msgType item, or None; bytes that are not UTF-8 come as lone surrogates.")
      .def_property_readonly(
          "msg_time", [](const PyMessage& self) { return OptionalText(self.message().msg_time); },
          "The msgTime item (12 digits, yyyyMMddHHmm), or None.")
      .def_property_readonly(
          "attrs",
          [](const PyMessage& self) {
            py::dict out;
            for (const auto& [key, value] : self.message().properties) {
              out[WireText(key)] = WireText(value);
            }
            return out;
          },
          "The attributes, str to str; bytes that are not UTF-8 come as lone surrogates.")
      .def_property_readonly(
          "raw_msg_type",
          [](const PyMessage& self) {
            const std::string& type = self.message().msg_type;
            return type.empty() ? py::object(py::none()) : py::object(py::bytes(type));
          },
          "The msgType item exactly as the producer wrote it, or None.")
      .def_property_readonly(
          "raw_attrs",
          [](const PyMessage& self) {
            py::dict out;
            for (const auto& [key, value] : self.message().properties) {
              out[py::bytes(key)] = py::bytes(value);
            }
            return out;
          },
          "The attributes exactly as the producer wrote them, bytes to bytes.")
      .def("__len__", [](const PyMessage& self) { return self.message().body.size(); })
      .def("__repr__", &MessageRepr);

  py::class_<ReceivedBatch, std::shared_ptr<ReceivedBatch>>(module, "Batch",
                                                             "The messages of one fetch.")
      .def_property_readonly("topic", TextMember(&ReceivedBatch::topic))
      .def_property_readonly("partition_key", TextMember(&ReceivedBatch::partition_key))
      .def_property_readonly("confirm_context", TextMember(&ReceivedBatch::confirm_context))
      .def_readonly("offset", &ReceivedBatch::offset)
      .def_readonly("max_offset", &ReceivedBatch::max_offset)
      .def("messages", [](const std::shared_ptr<ReceivedBatch>& batch) {
        py::list out;
        for (size_t i = 0; i < batch->messages.size(); ++i) {
          out.append(py::cast(PyMessage{batch, i}));
        }
        return out;
      })
      .def("arrow_columns", &ArrowColumns,
           "The messages as Arrow buffers (see tubemq.spark._arrow), without a Python "
           "object per message.")
      .def("__len__", [](const ReceivedBatch& batch) { return batch.messages.size(); });

  py::class_<PartitionStatus>(module, "PartitionMeta",
                              "A partition of the subscribed topics, as the master lists it.")
      .def_property_readonly("key", TextMember(&PartitionStatus::key))
      .def_property_readonly("topic", TextMember(&PartitionStatus::topic))
      .def_readonly("broker_id", &PartitionStatus::broker_id)
      .def_readonly("partition_id", &PartitionStatus::partition_id)
      .def_property_readonly("broker", TextMember(&PartitionStatus::broker))
      .def_readonly("subscribable", &PartitionStatus::subscribable)
      .def("__repr__", [](const PartitionStatus& self) {
        return py::str("PartitionMeta(key={!r}, broker={!r}, subscribable={})")
            .format(WireText(self.key), WireText(self.broker), self.subscribable);
      });

  py::class_<PyConsumer>(module, "Consumer", "The native consumer (use tubemq.Consumer).")
      .def(py::init([](const ClientConfig& config, std::string group,
                       std::map<std::string, std::set<std::string>> topics,
                       const std::string& consume_from, int64_t msg_not_found_wait_ms,
                       int64_t confirm_timeout_ms, bool client_balance, int32_t source_count,
                       int32_t node_id, std::string session_key, bool select_big,
                       std::map<std::string, int64_t> bound_offsets) {
             ConsumerOptions options;
             options.group = std::move(group);
             options.topics = std::move(topics);
             options.position = ParsePosition(consume_from);
             options.msg_not_found_wait_ms = msg_not_found_wait_ms;
             options.confirm_timeout_ms = confirm_timeout_ms;
             options.client_balance = client_balance;
             options.source_count = source_count;
             options.node_id = node_id;
             options.session_key = std::move(session_key);
             options.select_big = select_big;
             options.bound_offsets = std::move(bound_offsets);
             return std::make_unique<PyConsumer>(config, std::move(options));
           }),
           py::arg("config"), py::arg("group"), py::arg("topics"), py::arg("consume_from"),
           py::arg("msg_not_found_wait_ms"), py::arg("confirm_timeout_ms"),
           py::arg("client_balance") = false, py::arg("source_count") = 0,
           py::arg("node_id") = 0, py::arg("session_key") = "", py::arg("select_big") = true,
           py::arg("bound_offsets") = std::map<std::string, int64_t>{})
      .def("query_partitions", &PyConsumer::QueryPartitions, py::arg("refresh"))
      .def("assign", &PyConsumer::Assign, py::arg("partition_key"), py::arg("offset"))
      .def("unassign", &PyConsumer::Unassign, py::arg("partition_key"), py::arg("commit"))
      .def("start", &PyConsumer::Start, py::arg("timeout") = py::none())
      .def("poll", &PyConsumer::Poll, py::arg("timeout"))
      .def("confirm", &PyConsumer::Confirm, py::arg("confirm_context"), py::arg("consumed"))
      .def("close", &PyConsumer::Close, py::arg("timeout") = py::none())
      .def("pause",
           [](PyConsumer& self, const WireString& key) { return self.native().Pause(key.bytes); },
           py::arg("partition_key"))
      .def("resume",
           [](PyConsumer& self, const WireString& key) { return self.native().Resume(key.bytes); },
           py::arg("partition_key"))
      .def("paused", [](PyConsumer& self) { return TextList(self.native().Paused()); })
      .def("offsets",
           [](PyConsumer& self) {
             py::dict out;
             for (const auto& [key, offsets] : self.native().Offsets()) {
               out[WireText(key)] = py::make_tuple(offsets.first, offsets.second);
             }
             return out;
           })
      .def("counters",
           [](PyConsumer& self) {
             const Consumer::Counters c = WithoutGil([&] { return self.native().counters(); });
             py::dict out;
             out["registrations"] = c.registrations;
             out["heartbeats_ok"] = c.heartbeats_ok;
             out["heartbeats_failed"] = c.heartbeats_failed;
             out["rebalance_events"] = c.rebalance_events;
             out["fetches"] = c.fetches;
             out["fetch_errors"] = c.fetch_errors;
             out["batches"] = c.batches;
             out["messages"] = c.messages;
             out["bytes"] = c.bytes;
             out["commits"] = c.commits;
             out["commit_failures"] = c.commit_failures;
             out["reconnects"] = c.reconnects;
             out["master_switches"] = c.master_switches;
             out["master_standby_answers"] = c.master_standby_answers;
             return out;
           })
      .def("held_partitions",
           [](PyConsumer& self) { return TextList(self.native().HeldPartitions()); })
      .def("bound_offsets_applied",
           [](PyConsumer& self) { return self.native().BoundOffsetsApplied(); })
      .def_property_readonly("client_id", [](PyConsumer& self) { return self.native().client_id(); });
}

}  // namespace tubemq::bindings
