// One fuzz target for every parser of bytes that come from the network: the frame
// reader, the RPC envelopes (and the GetMessage reply inside one), the metadata strings
// the master sends, flow-control rule JSON, received message data and the InLongMsg
// packs inside it. The first input byte chooses the parser, the rest is its input, so
// one corpus and one binary cover them all.
//
// Built two ways: with clang's libFuzzer (scripts/fuzz.sh, -fsanitize=fuzzer,address)
// for long runs, and with any compiler beside replay_main.cc, which replays the corpus
// and a bounded number of seeded mutations of it as a ctest.
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "codec/frame_codec.h"
#include "codec/remote_exception.h"
#include "codec/rpc_envelope.h"
#include "consumer/fetch_reply.h"
#include "flowctrl/flow_ctrl_rule_handler.h"
#include "flowctrl/flow_ctrl_rules.h"
#include "meta/broker_info.h"
#include "meta/message_data.h"
#include "meta/partition.h"
#include "meta/subscribe_info.h"
#include "tubemq/inlong_msg.h"

namespace {

using namespace tubemq;  // NOLINT: a fuzz target, nothing else lives here

// protobuf reports every message it cannot parse on stderr; millions of runs would
// drown a real finding.
void IgnoreProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}
const bool kProtobufQuiet = (google::protobuf::SetLogHandler(&IgnoreProtobufLog), true);

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const size_t stop = end == std::string_view::npos ? text.size() : end;
    lines.emplace_back(text.substr(start, stop - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

// Brokers 1..3 as the metadata parsers expect them to be known.
const meta::BrokerMap& KnownBrokers() {
  static const meta::BrokerMap brokers = [] {
    Status ignored;
    return meta::ParseBrokerList({"1:127.0.0.1:8123", "2:127.0.0.2:8123", "3:127.0.0.3: "},
                                 false, &ignored);
  }();
  return brokers;
}

void FuzzFrames(std::string_view input) {
  // The first byte sets the chunk size, so the same bytes arrive split in many ways;
  // the second half of the cases uses tiny limits to reach the limit checks.
  if (input.empty()) return;
  const size_t chunk = 1 + static_cast<uint8_t>(input[0]) % 64;
  codec::FrameLimits limits;
  if (input[0] & 0x80) {
    limits.max_block_count = 4;
    limits.max_payload_size = 256;
  }
  codec::FrameReader reader(limits);
  std::vector<codec::Frame> frames;
  const auto* bytes = reinterpret_cast<const uint8_t*>(input.data()) + 1;
  size_t left = input.size() - 1;
  while (left > 0) {
    const size_t now = left < chunk ? left : chunk;
    if (!reader.Feed(bytes, now, frames).ok()) break;
    bytes += now;
    left -= now;
  }
  for (const codec::Frame& frame : frames) {
    codec::RpcReply reply;
    if (codec::DecodeResponsePayload(frame.payload, reply).ok() &&
        reply.status != codec::ResponseStatus::kSuccess) {
      (void)codec::RemoteExceptionStatus(reply);
    }
  }
}

// A GetMessage reply decoded in place: beyond "no crash", every view must lie inside
// the buffers the batch keeps, and the bodies must be one run from the buffer's start.
void FuzzFetchReply(std::string_view data) {
  consumer::FetchReply fetched;
  if (!consumer::DecodeFetchReply(std::string(data), {}, fetched).ok()) return;
  const std::string_view bytes = fetched.owner->bytes;
  const std::string_view attributes = fetched.owner->attributes;
  auto inside = [](std::string_view part, std::string_view whole) {
    return part.empty() || (part.data() >= whole.data() &&
                            part.data() + part.size() <= whole.data() + whole.size());
  };
  size_t run = 0;
  for (const ReceivedMessage& message : fetched.messages) {
    if (!inside(message.body, bytes) || !inside(message.attribute, attributes) ||
        !inside(message.msg_type, message.attribute) ||
        !inside(message.msg_time, message.attribute)) {
      std::abort();
    }
    if (!message.body.empty() && message.body.data() != bytes.data() + run) std::abort();
    run += message.body.size();
  }
}

void FuzzResponse(std::string_view input) {
  codec::RpcReply reply;
  if (codec::DecodeResponsePayload(input, reply).ok()) {
    (void)codec::RemoteExceptionStatus(reply);
    (void)codec::SimpleClassName(reply.exception_name);
    (void)codec::ClassifyRemoteException(reply.exception_name);
    FuzzFetchReply(reply.data);
  }
  FuzzFetchReply(input);  // the same bytes as a reply's data: most inputs never get that far
}

void FuzzRequest(std::string_view input) {
  codec::RpcRequestView request;
  (void)codec::DecodeRequestPayload(input, request);
}

void FuzzBrokers(std::string_view input) {
  for (const bool tls : {false, true}) {
    meta::BrokerInfo info;
    (void)meta::ParseBrokerInfo(input, tls, info);
    Status first_error;
    (void)meta::ParseBrokerList(Lines(input), tls, &first_error);
  }
}

void FuzzProducerTopic(std::string_view input) {
  meta::TopicPartitions out;
  (void)meta::ParseProducerTopicInfo(input, KnownBrokers(), out);
}

void FuzzConsumerTopicMeta(std::string_view input) {
  std::vector<meta::SubscribablePartition> out;
  (void)meta::ParseConsumerTopicMeta(input, KnownBrokers(), out);
}

void FuzzSubscribe(std::string_view input) {
  meta::Partition partition;
  (void)meta::ParsePartitionFullString(input, partition);
  meta::SubscribeInfo info;
  (void)meta::ParseSubscribeInfo(input, info);
  int32_t code = 0;
  meta::Partition failed;
  (void)meta::ParsePartitionFailure(input, code, failed);
}

void FuzzFlowRules(std::string_view input) {
  flowctrl::FlowCtrlRules rules;
  if (flowctrl::FlowCtrlRules::Parse(input, rules).ok()) {
    for (const int64_t lag : {int64_t{0}, int64_t{1} << 20, int64_t{1} << 40, int64_t{-1}}) {
      for (const int time_of_day : {0, 1200, 2359, 2400}) (void)rules.DataLimitFor(lag, time_of_day);
    }
    for (const int32_t empty : {0, 1, 2, 5, 1000, -1}) (void)rules.FrequencyPause(empty, 400);
  }
  flowctrl::FlowCtrlRuleHandler handler;
  (void)handler.UpdateDefault(1, input);
  (void)handler.UpdateGroup(2, input, 301);
}

void FuzzMessage(std::string_view input) {
  if (input.size() < 2) return;
  const int32_t flag = static_cast<uint8_t>(input[0]) & 1;
  const std::string_view data = input.substr(1);
  meta::DecodedMessage out;
  // With the right checksum the decoder goes past it, into the attribute parsing.
  (void)meta::DecodeMessageData(data, flag, meta::MaskedCrc32(data), out);
  meta::DecodedMessage wrong;
  (void)meta::DecodeMessageData(data, flag, 0, wrong);
}

// InLongMsg packs come from any producer of a topic. Beyond "no crash", a decoded pack
// must only point inside its blocks: abort otherwise, so the fuzzer reports it.
void FuzzInLongMsg(std::string_view input) {
  inlong::DecodeOptions options;
  options.max_decompressed = 1 << 20;  // keeps each run fast; the cap path is exercised too
  inlong::Pack pack;
  inlong::DecodeError error;
  if (!inlong::Decode(input, options, pack, error)) {
    if (error.offset > input.size()) std::abort();
    return;
  }
  for (const inlong::Record& record : pack.records) {
    const size_t size =
        record.block == 0 ? input.size() : pack.blocks.at(record.block - 1).size();
    if (record.offset > size || record.length > size - record.offset) std::abort();
  }
}

// TUBEMQ_FUZZ_ONLY=9 (say) sends every input to that one parser, whatever its first
// byte: a long run of one parser (scripts/fuzz.sh --only inlong) spends no time on the
// others. Inputs keep their layout (the first byte is still skipped), so corpora mix.
int OnlyParser() {
  static const int only = [] {
    const char* value = std::getenv("TUBEMQ_FUZZ_ONLY");
    if (value == nullptr || *value < '0' || *value > '9' || value[1] != '\0') return -1;
    return *value - '0';
  }();
  return only;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int only = OnlyParser();
  switch (only >= 0 ? only : data[0] % 10) {
    case 0: FuzzFrames(input); break;
    case 1: FuzzResponse(input); break;
    case 2: FuzzRequest(input); break;
    case 3: FuzzBrokers(input); break;
    case 4: FuzzProducerTopic(input); break;
    case 5: FuzzConsumerTopicMeta(input); break;
    case 6: FuzzSubscribe(input); break;
    case 7: FuzzFlowRules(input); break;
    case 8: FuzzMessage(input); break;
    case 9: FuzzInLongMsg(input); break;
  }
  return 0;
}
