// The bytes of a message on the wire (protocol.md §5.9-5.11): the attribute string with
// its reserved items, the optional length-prefixed attribute header before the body, the
// masked CRC-32 and the sender address as a signed 32-bit integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tubemq/message.h"
#include "tubemq/status.h"

namespace tubemq::producer {

inline constexpr std::string_view kMsgTypeKey = "$msgType$";
inline constexpr std::string_view kMsgTimeKey = "$msgTime$";

// "$msgType$=<t>,$msgTime$=<time>,k1=v1,..." (reserved items first, as the Java client
// writes them), or "" when the message has none. kInvalidArgument names the bad part.
Status BuildAttribute(const OutgoingMessage& message, std::string& attribute);

// The `data` field and its flag: the body alone (flag 0), or the 4-byte big-endian
// attribute length, the attribute and the body (flag 1).
struct MessageData {
  std::string data;
  int32_t flag = 0;
};
MessageData EncodeMessageData(std::string_view attribute, std::string&& body);

// CRC-32 (zlib's) of `data`, masked to 31 bits as the broker computes it.
int32_t MaskedCrc32(std::string_view data);

// "a.b.c.d" -> (a<<24 | b<<16 | c<<8 | d) as int32; 0 for anything else.
int32_t SentAddr(std::string_view ipv4);

}  // namespace tubemq::producer
