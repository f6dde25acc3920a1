// tubemq._core.Consumer and PartitionMeta: the native consumer of both kinds. Polls wait
// in short slices with the GIL released and signals checked between them (wait.h); what
// a poll returns is a Batch of Messages (message.cc).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "errors.h"
#include "text.h"
#include "tubemq/consumer.h"
#include "wait.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

bool NothingNow(ErrorCode code) {
  return code == ErrorCode::kNotFound || code == ErrorCode::kNoPartitionAssigned ||
         code == ErrorCode::kAllPartitionWaiting || code == ErrorCode::kAllPartitionInUse;
}

class PyConsumer {
 public:
  PyConsumer(const ClientConfig& config, ConsumerOptions options)
      : consumer_(std::make_unique<Consumer>(config, std::move(options))) {
    Check(consumer_->Usable());
  }
  ~PyConsumer() {
    DestroyClient(consumer_);
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
  std::vector<PartitionMeta> QueryPartitions(bool refresh) {
    std::vector<PartitionMeta> out;
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

  // `wait`: None as configured (commit_on_next_fetch), True a commit the broker answered
  // before the call returns, False one that rides on the partition's next fetch.
  void Confirm(const WireString& context, bool consumed, std::optional<bool> wait) {
    const CommitRoute route = !wait ? CommitRoute::kAsConfigured
                              : *wait ? CommitRoute::kRequest
                                      : CommitRoute::kNextFetch;
    const Status status =
        WithoutGil([&] { return consumer_->Confirm(context.bytes, consumed, route); });
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

py::list TextList(const std::vector<std::string>& names) {
  py::list out;
  for (const std::string& name : names) out.append(WireText(name));
  return out;
}

}  // namespace

void RegisterConsumer(py::module_& module) {
  py::class_<PartitionMeta>(module, "PartitionMeta",
                              "A partition of the subscribed topics, as the master lists it.")
      .def_property_readonly("key", TextMember(&PartitionMeta::key))
      .def_property_readonly("topic", TextMember(&PartitionMeta::topic))
      .def_readonly("broker_id", &PartitionMeta::broker_id)
      .def_readonly("partition_id", &PartitionMeta::partition_id)
      .def_property_readonly("broker", TextMember(&PartitionMeta::broker))
      .def_readonly("subscribable", &PartitionMeta::subscribable)
      .def("__repr__", [](const PartitionMeta& self) {
        return py::str("PartitionMeta(key={!r}, broker={!r}, subscribable={})")
            .format(WireText(self.key), WireText(self.broker), self.subscribable);
      });

  // Where a new group starts. The facade maps its consume_from words to these
  // (tubemq._config.CONSUME_FROM): the words are spelled there only.
  py::enum_<ConsumePosition>(module, "ConsumePosition")
      .value("EARLIEST", ConsumePosition::kEarliest)
      .value("LATEST", ConsumePosition::kLatest)
      .value("MAX_ALWAYS", ConsumePosition::kMaxAlways);

  // Bound field by field, like ProducerOptions: tubemq._config fills it from checked
  // values (native_consumer_options), and the defaults are the C++ struct's.
  py::class_<ConsumerOptions>(module, "ConsumerOptions", "Settings only a consumer has.")
      .def(py::init<>())
      .def_readwrite("group", &ConsumerOptions::group)
      .def_readwrite("topics", &ConsumerOptions::topics)
      .def_readwrite("position", &ConsumerOptions::position)
      .def_readwrite("msg_not_found_wait_ms", &ConsumerOptions::msg_not_found_wait_ms)
      .def_readwrite("confirm_timeout_ms", &ConsumerOptions::confirm_timeout_ms)
      .def_readwrite("commit_on_next_fetch", &ConsumerOptions::commit_on_next_fetch)
      .def_readwrite("fetch_ahead_bytes", &ConsumerOptions::fetch_ahead_bytes)
      .def_readwrite("assigned", &ConsumerOptions::assigned)
      .def_readwrite("source_count", &ConsumerOptions::source_count)
      .def_readwrite("node_id", &ConsumerOptions::node_id)
      .def_readwrite("session_key", &ConsumerOptions::session_key)
      .def_readwrite("select_big", &ConsumerOptions::select_big)
      .def_readwrite("bound_offsets", &ConsumerOptions::bound_offsets);

  py::class_<PyConsumer>(module, "Consumer", "The native consumer (use tubemq.Consumer).")
      .def(py::init<const ClientConfig&, ConsumerOptions>(), py::arg("config"),
           py::arg("options"))
      .def("query_partitions", &PyConsumer::QueryPartitions, py::arg("refresh"))
      .def("assign", &PyConsumer::Assign, py::arg("partition_key"), py::arg("offset"))
      .def("unassign", &PyConsumer::Unassign, py::arg("partition_key"), py::arg("commit"))
      .def("start", &PyConsumer::Start, py::arg("timeout") = py::none())
      .def("poll", &PyConsumer::Poll, py::arg("timeout"))
      .def("confirm", &PyConsumer::Confirm, py::arg("confirm_context"), py::arg("consumed"),
           py::arg("wait") = py::none())
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
             out["rests_cut_short"] = c.rests_cut_short;
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
