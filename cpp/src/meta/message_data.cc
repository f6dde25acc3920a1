#include "meta/message_data.h"

#include <algorithm>
#include <cctype>

#include "codec/big_endian.h"
#include "codec/crc32.h"
#include "meta/text.h"
#include "tubemq/consumer.h"

namespace tubemq::meta {
namespace {

Status CheckAttributePart(std::string_view what, std::string_view text, bool may_be_blank) {
  if (!may_be_blank && Trim(text).empty()) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + " must not be blank");
  }
  if (text.find_first_of(",=") != std::string_view::npos) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + " '" + std::string(text) + "' contains ',' or '='");
  }
  return Status::OK();
}

}  // namespace

Status BuildAttribute(const OutgoingMessage& message, std::string& attribute) {
  attribute.clear();
  const auto append = [&attribute](std::string_view key, std::string_view value) {
    if (!attribute.empty()) attribute.push_back(',');
    attribute.append(key).push_back('=');
    attribute.append(value);
  };
  if (!message.msg_type.empty()) {
    Status status = CheckAttributePart("msg_type", message.msg_type, false);
    if (!status.ok()) return status;
    append(kMsgTypeKey, message.msg_type);
  }
  if (!message.msg_time.empty()) {
    const bool twelve_digits =
        message.msg_time.size() == 12 &&
        std::all_of(message.msg_time.begin(), message.msg_time.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!twelve_digits) {
      return Status(ErrorCode::kInvalidArgument,
                    "msg_time must be 12 digits yyyyMMddHHmm, got '" + message.msg_time + "'");
    }
    append(kMsgTimeKey, message.msg_time);
  }
  for (const auto& [key, value] : message.attributes) {
    Status status = CheckAttributePart("attribute key", key, false);
    if (status.ok()) status = CheckAttributePart("attribute value", value, true);
    if (!status.ok()) return status;
    if (key == kMsgTypeKey || key == kMsgTimeKey) {
      return Status(ErrorCode::kInvalidArgument,
                    "attribute key '" + key + "' is reserved; use msg_type / msg_time");
    }
    append(key, value);
  }
  return Status::OK();
}

MessageData EncodeMessageData(std::string_view attribute, std::string&& body) {
  MessageData out;
  out.body = std::move(body);
  if (attribute.empty()) return out;
  out.flag = 1;
  out.head.resize(4);
  codec::PutUint32(out.head.data(), static_cast<uint32_t>(attribute.size()));
  out.head.append(attribute);
  return out;
}

namespace {
int32_t Masked(uint32_t crc) { return static_cast<int32_t>(crc & 0x7FFFFFFFu); }
}  // namespace

int32_t MaskedCrc32(std::string_view data) { return Masked(codec::Crc32(0, data)); }

int32_t MaskedCrc32(const MessageData& data) {
  return Masked(codec::Crc32(codec::Crc32(0, data.head), data.body));
}

int32_t SentAddr(std::string_view ipv4) {
  const auto parts = Split(ipv4, '.');
  if (parts.size() != 4) return 0;
  uint32_t value = 0;
  for (std::string_view part : parts) {
    int64_t octet = 0;
    if (!ParseInt(part, octet) || octet < 0 || octet > 255) return 0;
    value = (value << 8) | static_cast<uint32_t>(octet);
  }
  return static_cast<int32_t>(value);
}

namespace {

// Walks the items of an attribute string: the reserved ones into `out`'s msg_type and
// msg_time, the others into `properties` when given.
void ScanAttribute(std::string_view attribute, DecodedMessage& out,
                   std::vector<std::pair<std::string_view, std::string_view>>* properties) {
  VisitAttributeItems(attribute, [&](std::string_view key, std::string_view value) {
    if (key == kMsgTypeKey) {
      out.msg_type = value;
    } else if (key == kMsgTimeKey) {
      const bool twelve_digits =
          value.size() == 12 && std::all_of(value.begin(), value.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          });
      if (twelve_digits) out.msg_time = value;
    } else if (properties != nullptr) {
      properties->emplace_back(key, value);
    }
  });
}

}  // namespace

bool DecodeMessageData(std::string_view data, int32_t flag, int32_t check_sum,
                       DecodedMessage& out, bool with_properties) {
  out = DecodedMessage();
  if (MaskedCrc32(data) != check_sum) return false;
  std::string_view rest = data;
  if ((flag & 1) != 0) {
    if (rest.size() < 4) return false;
    const uint32_t length = codec::GetUint32(reinterpret_cast<const uint8_t*>(rest.data()));
    rest.remove_prefix(4);
    if (length > rest.size()) return false;
    out.attribute = rest.substr(0, length);
    rest.remove_prefix(length);
  }
  out.body = rest;
  if (!out.attribute.empty()) {
    ScanAttribute(out.attribute, out, with_properties ? &out.properties : nullptr);
  }
  return true;
}

std::vector<std::pair<std::string_view, std::string_view>> ParseProperties(
    std::string_view attribute) {
  std::vector<std::pair<std::string_view, std::string_view>> properties;
  VisitProperties(attribute, [&properties](std::string_view key, std::string_view value) {
    properties.emplace_back(key, value);
  });
  return properties;
}

}  // namespace tubemq::meta

namespace tubemq {

std::vector<std::pair<std::string_view, std::string_view>> ReceivedMessage::Properties() const {
  return meta::ParseProperties(attribute);
}

}  // namespace tubemq
