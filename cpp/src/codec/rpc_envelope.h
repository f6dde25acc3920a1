// The RPC envelope (protocol.md §1.3, §2): a request payload is three length-delimited
// protobuf messages (RpcConnHeader, RequestHeader, RequestBody); a response payload is
// RpcConnHeader, ResponseHeader, then either RspResponseBody or RspExceptionBody.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "codec/rpc_methods.h"
#include "tubemq/status.h"

namespace google::protobuf {
class MessageLite;
}

namespace tubemq::codec {

// Builds a request payload. `server_timeout_ms` goes into RequestBody.timeout, which
// the server uses to drop requests it could not answer in time: it must be positive,
// because a missing timeout makes the server drop every request (protocol.md §2.6).
std::string EncodeRequestPayload(Method method, int64_t server_timeout_ms,
                                 std::string_view request_body);

// The whole request frame (codec/frame_codec.h) of `request`, with serial number 0 (the
// connection patches it in). Byte for byte the same as
// EncodeFrame(0, EncodeRequestPayload(method, timeout, request.SerializeAsString())),
// but the request is serialized once, straight into the frame when the payload fits one
// block (8 KiB): the message data is copied once instead of three times.
//
// `raw_fields` are bytes of more fields of `request`, already encoded (tag, length,
// value) by the caller and written after the ones `request` holds: protobuf readers take
// fields in any order, and a large field then goes from its own buffers into the frame
// without a copy into the message first. `buffer` lends its capacity to the frame (a
// frame the connection wrote before), so that a stream of requests allocates none.
std::string EncodeRequestFrame(Method method, int64_t server_timeout_ms,
                               const google::protobuf::MessageLite& request,
                               std::initializer_list<std::string_view> raw_fields = {},
                               std::string buffer = {});

// The key of a raw length-delimited field (tag, then the length as a varint), to come
// before its `length` bytes of value in EncodeRequestFrame's `raw_fields`.
std::string LengthDelimitedKey(uint32_t field_number, size_t length);

enum class ResponseStatus : int32_t { kSuccess = 0, kError = 1, kFatal = 2 };

struct RpcReply {
  ResponseStatus status = ResponseStatus::kSuccess;
  int32_t method = 0;
  std::string data;               // the method response (status == kSuccess)
  std::string exception_name;     // the Java class name (otherwise)
  std::string exception_message;  // "stackTrace", which really holds the message text
};

// Parses a response payload. A payload that does not follow the envelope rules gives
// kProtocolError. An exception response parses fine (status != kSuccess).
Status DecodeResponsePayload(std::string_view payload, RpcReply& reply);

// For tests and for fake servers: the inverse operations.
std::string EncodeSuccessResponsePayload(int32_t method, std::string_view data);
std::string EncodeExceptionResponsePayload(ResponseStatus status, std::string_view name,
                                           std::string_view message);
struct RpcRequestView {
  ServiceType service = ServiceType::kMaster;
  int32_t protocol_version = 0;
  int32_t method = 0;
  int64_t timeout_ms = 0;
  std::string body;
};
Status DecodeRequestPayload(std::string_view payload, RpcRequestView& request);

}  // namespace tubemq::codec
