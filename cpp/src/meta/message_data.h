// The bytes of a message on the wire (protocol.md §5.9-5.11): the attribute string with
// its reserved items, the optional length-prefixed attribute header before the body, the
// masked CRC-32 and the sender address as a signed 32-bit integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tubemq/attribute_items.h"  // kMsgTypeKey, kMsgTimeKey, the item reading
#include "tubemq/message.h"
#include "tubemq/status.h"

namespace tubemq::meta {

// "$msgType$=<t>,$msgTime$=<time>,k1=v1,..." (reserved items first, as the Java client
// writes them), or "" when the message has none. kInvalidArgument names the bad part.
Status BuildAttribute(const OutgoingMessage& message, std::string& attribute);

// The `data` field and its flag: the body alone (flag 0), or the 4-byte big-endian
// attribute length, the attribute and the body (flag 1). Kept in two parts, `head` (the
// length and the attribute, or nothing) and the caller's own `body`, which the send path
// writes into the request frame without joining them first.
struct MessageData {
  std::string head;
  std::string body;
  int32_t flag = 0;

  size_t size() const { return head.size() + body.size(); }
  std::string Joined() const { return head + body; }
};
MessageData EncodeMessageData(std::string_view attribute, std::string&& body);

// CRC-32 (zlib's) of `data`, masked to 31 bits as the broker computes it.
int32_t MaskedCrc32(std::string_view data);
int32_t MaskedCrc32(const MessageData& data);  // of its head and body, as one

// "a.b.c.d" -> (a<<24 | b<<16 | c<<8 | d) as int32; 0 for anything else.
int32_t SentAddr(std::string_view ipv4);

// A received message (protocol.md §5.12), as views into the fetched bytes: nothing is
// copied, so the views live as long as the buffer that holds `data`.
struct DecodedMessage {
  std::string_view attribute;  // "" when the message has none
  std::string_view body;
  std::string_view msg_type;   // from the "$msgType$" item
  std::string_view msg_time;   // from "$msgTime$", only when it is 12 digits
  // The other "key=value" items, in order; items without '=' or with a blank key are
  // dropped, as the Java client drops them.
  std::vector<std::pair<std::string_view, std::string_view>> properties;
};

// false when the message must be skipped: checksum mismatch, or an attribute header
// that does not fit the data (a corrupt or hostile message). Without `with_properties`
// `out.properties` stays empty (the fetch path parses them only when asked,
// ParseProperties).
bool DecodeMessageData(std::string_view data, int32_t flag, int32_t check_sum,
                       DecodedMessage& out, bool with_properties = true);

// The "key=value" items of an attribute string other than the reserved ones.
std::vector<std::pair<std::string_view, std::string_view>> ParseProperties(
    std::string_view attribute);

}  // namespace tubemq::meta
