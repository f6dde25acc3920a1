#include "consumer/fetch_reply.h"

#include <cstring>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "meta/message_data.h"

namespace tubemq::consumer {

namespace {

using google::protobuf::io::CodedInputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;

constexpr int kVarint = WireFormat::WIRETYPE_VARINT;
constexpr int kLengthDelimited = WireFormat::WIRETYPE_LENGTH_DELIMITED;

Status Malformed(const char* what) {
  return Status(ErrorCode::kProtocolError,
                std::string("cannot parse the GetMessageResponseB2C in the reply: ") + what);
}

// A field's number and wire type, from its tag.
struct Field {
  uint32_t number;
  int wire_type;
};
Field FieldOf(uint32_t tag) {
  return {tag >> 3, static_cast<int>(WireFormat::GetTagWireType(tag))};
}

// One TransferedMessage, as the wire has it; `payload` is an offset into the buffer.
struct WireMessage {
  int64_t message_id = 0;
  int32_t check_sum = 0;
  int32_t flag = 0;
  size_t payload_at = 0;
  size_t payload_size = 0;
};

// Reads one TransferedMessage (its length already pushed as the limit). A field of an
// unexpected wire type is skipped as an unknown one, as protobuf does; all four fields
// are required.
bool ReadMessage(CodedInputStream& in, WireMessage& out) {
  bool id = false, sum = false, payload = false, flag = false;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    const Field field = FieldOf(tag);
    uint64_t value = 0;
    if (field.number == 3 && field.wire_type == kLengthDelimited) {
      uint32_t size = 0;
      if (!in.ReadVarint32(&size)) return false;
      out.payload_at = static_cast<size_t>(in.CurrentPosition());
      out.payload_size = size;
      if (!in.Skip(static_cast<int>(size))) return false;
      payload = true;
    } else if (field.number >= 1 && field.number <= 4 && field.wire_type == kVarint) {
      if (!in.ReadVarint64(&value)) return false;
      if (field.number == 1) out.message_id = static_cast<int64_t>(value), id = true;
      if (field.number == 2) out.check_sum = static_cast<int32_t>(value), sum = true;
      if (field.number == 4) out.flag = static_cast<int32_t>(value), flag = true;
    } else if (!WireFormat::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage() && id && sum && payload && flag;
}

// How many TransferedMessages the reply holds: a scan of its top-level fields, so that
// the vectors of a batch are sized once. Grown by doubling instead, each growth copied
// them into fresh memory whose pages faulted in: a reply of 1 000 messages of 100 B took
// 170 us to decode instead of 67 (a loop over one reply, this machine). A malformed reply
// counts what it can; the decoding pass finds the fault.
size_t CountMessages(const std::string& data) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(data.data()),
                      static_cast<int>(data.size()));
  size_t count = 0;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    if (FieldOf(tag).number == 4 && FieldOf(tag).wire_type == kLengthDelimited) ++count;
    if (!WireFormat::SkipField(&in, tag)) break;
  }
  return count;
}

// Where a kept message's attribute went in the side buffer, and its reserved items
// within it (offsets from the attribute's start; npos when absent).
struct AttributeAt {
  size_t at = 0;
  size_t size = 0;
  size_t type_at = std::string_view::npos, type_size = 0;
  size_t time_at = std::string_view::npos, time_size = 0;
};

std::string_view Within(std::string_view text, size_t at, size_t size) {
  return at == std::string_view::npos ? std::string_view() : text.substr(at, size);
}

}  // namespace

Status DecodeFetchReply(std::string bytes, const std::set<std::string>& filters,
                        FetchReply& out) {
  out = FetchReply();
  auto buffer = std::make_shared<FetchBuffer>();
  buffer->bytes = std::move(bytes);
  std::string& data = buffer->bytes;
  std::vector<AttributeAt> attributes;
  const size_t expected = CountMessages(data);
  attributes.reserve(expected);
  out.messages.reserve(expected);
  size_t bodies_end = 0;  // the kept bodies so far fill data[0, bodies_end)

  CodedInputStream in(reinterpret_cast<const uint8_t*>(data.data()),
                      static_cast<int>(data.size()));
  bool success = false, err_code = false;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    const Field field = FieldOf(tag);
    if (field.wire_type == kLengthDelimited && (field.number == 3 || field.number == 4)) {
      uint32_t size = 0;
      if (!in.ReadVarint32(&size)) return Malformed("a length past the end");
      if (field.number == 3) {
        if (!in.ReadString(&out.err_msg, static_cast<int>(size))) {
          return Malformed("errMsg past the end");
        }
        continue;
      }
      const auto limit = in.PushLimit(static_cast<int>(size));
      WireMessage wire;
      if (!ReadMessage(in, wire)) return Malformed("a TransferedMessage");
      in.PopLimit(limit);
      const std::string_view payload(data.data() + wire.payload_at, wire.payload_size);
      out.payload_bytes += static_cast<int64_t>(payload.size());
      meta::DecodedMessage decoded;
      if (!meta::DecodeMessageData(payload, wire.flag, wire.check_sum, decoded,
                                   /*with_properties=*/false)) {
        ++out.corrupt;
        continue;
      }
      if (!filters.empty() && filters.count(std::string(decoded.msg_type)) == 0) continue;
      // The attribute first: moving the body may overwrite it.
      AttributeAt where;
      where.at = buffer->attributes.size();
      where.size = decoded.attribute.size();
      if (!decoded.msg_type.empty()) {
        where.type_at = static_cast<size_t>(decoded.msg_type.data() - decoded.attribute.data());
        where.type_size = decoded.msg_type.size();
      }
      if (!decoded.msg_time.empty()) {
        where.time_at = static_cast<size_t>(decoded.msg_time.data() - decoded.attribute.data());
        where.time_size = decoded.msg_time.size();
      }
      buffer->attributes.append(decoded.attribute);
      attributes.push_back(where);
      // Only bytes already read are written: the body lies behind the read position,
      // and its new place is at or before its old one.
      if (!decoded.body.empty()) {
        std::memmove(data.data() + bodies_end, decoded.body.data(), decoded.body.size());
      }
      ReceivedMessage message;
      message.message_id = wire.message_id;
      message.body = std::string_view(data.data() + bodies_end, decoded.body.size());
      bodies_end += decoded.body.size();
      out.messages.push_back(message);
      continue;
    }
    uint64_t value = 0;
    if (field.wire_type == kVarint && field.number >= 1 && field.number <= 10 &&
        field.number != 3 && field.number != 4) {
      if (!in.ReadVarint64(&value)) return Malformed("a number past the end");
      switch (field.number) {
        case 1: out.success = value != 0, success = true; break;
        case 2: out.err_code = static_cast<int32_t>(value), err_code = true; break;
        case 5: out.curr_offset = static_cast<int64_t>(value); break;
        case 6: out.min_limit_time = static_cast<int32_t>(value); break;
        case 7: out.esc_flow_ctrl = value != 0; break;
        case 8: out.curr_data_dlt = static_cast<int64_t>(value); break;
        case 9: out.require_slow = value != 0; break;
        case 10: out.max_offset = static_cast<int64_t>(value); break;
        default: break;
      }
      continue;
    }
    // Unknown fields, and known ones of another wire type, are skipped (as protobuf
    // keeps them as unknown fields).
    if (!WireFormat::SkipField(&in, tag)) return Malformed("a field past the end");
  }
  if (!in.ConsumedEntireMessage()) return Malformed("a stray end-group tag");
  if (!success || !err_code) return Malformed("success or errCode missing");
  // The side buffer has stopped growing: the views into it can be made now.
  const std::string_view all_attributes = buffer->attributes;
  for (size_t i = 0; i < out.messages.size(); ++i) {
    const AttributeAt& where = attributes[i];
    ReceivedMessage& message = out.messages[i];
    message.attribute = all_attributes.substr(where.at, where.size);
    message.msg_type = Within(message.attribute, where.type_at, where.type_size);
    message.msg_time = Within(message.attribute, where.time_at, where.time_size);
  }
  out.owner = std::move(buffer);
  return Status::OK();
}

}  // namespace tubemq::consumer
