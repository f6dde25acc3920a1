#include "codec/rpc_envelope.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "RPC.pb.h"

namespace tubemq::codec {
namespace {

using google::protobuf::MessageLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;

void WriteDelimited(const MessageLite& message, CodedOutputStream& out) {
  out.WriteVarint32(static_cast<uint32_t>(message.ByteSizeLong()));
  message.SerializeWithCachedSizes(&out);
}

// Reads one delimited message. Fails when the length varint or the message is cut
// short, when the message does not parse, or when a required field is missing.
bool ReadDelimited(CodedInputStream& in, size_t total_size, MessageLite& message) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const size_t position = static_cast<size_t>(in.CurrentPosition());
  if (length > total_size - position) return false;
  const auto limit = in.PushLimit(static_cast<int>(length));
  const bool parsed = message.ParseFromCodedStream(&in) && in.BytesUntilLimit() == 0;
  in.PopLimit(limit);
  return parsed;
}

template <typename Fill>
std::string BuildPayload(Fill fill) {
  std::string payload;
  {
    StringOutputStream stream(&payload);
    CodedOutputStream out(&stream);
    fill(out);
  }
  return payload;
}

Status Malformed(const char* what) {
  return Status(ErrorCode::kProtocolError, std::string("malformed response envelope: ") + what);
}

}  // namespace

std::string EncodeRequestPayload(Method method, int64_t server_timeout_ms,
                                 std::string_view request_body) {
  pb::RpcConnHeader conn;
  conn.set_flag(kRpcFlagRequest);
  pb::RequestHeader header;
  header.set_servicetype(static_cast<int32_t>(ServiceTypeOf(method)));
  header.set_protocolver(kRpcProtocolVersion);
  pb::RequestBody body;
  body.set_method(static_cast<int32_t>(method));
  body.set_timeout(server_timeout_ms > 0 ? server_timeout_ms : 1);
  body.set_request(request_body.data(), request_body.size());
  return BuildPayload([&](CodedOutputStream& out) {
    WriteDelimited(conn, out);
    WriteDelimited(header, out);
    WriteDelimited(body, out);
  });
}

Status DecodeResponsePayload(std::string_view payload, RpcReply& reply) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()),
                      static_cast<int>(payload.size()));
  pb::RpcConnHeader conn;
  if (!ReadDelimited(in, payload.size(), conn)) return Malformed("RpcConnHeader");
  pb::ResponseHeader header;
  if (!ReadDelimited(in, payload.size(), header)) return Malformed("ResponseHeader");
  reply.status = static_cast<ResponseStatus>(header.status());
  if (reply.status == ResponseStatus::kSuccess) {
    pb::RspResponseBody body;
    if (!ReadDelimited(in, payload.size(), body)) return Malformed("RspResponseBody");
    reply.method = body.method();
    reply.data = std::move(*body.mutable_data());
  } else {
    pb::RspExceptionBody body;
    if (!ReadDelimited(in, payload.size(), body)) return Malformed("RspExceptionBody");
    reply.exception_name = body.exceptionname();
    reply.exception_message = body.stacktrace();
  }
  // Bytes after the third message are ignored, as the Java peers do (protocol.md §1.5).
  return Status::OK();
}

std::string EncodeSuccessResponsePayload(int32_t method, std::string_view data) {
  pb::RpcConnHeader conn;
  conn.set_flag(kRpcFlagResponse);
  pb::ResponseHeader header;
  header.set_status(pb::ResponseHeader::SUCCESS);
  header.set_protocolver(kRpcProtocolVersion);
  pb::RspResponseBody body;
  body.set_method(method);
  body.set_data(data.data(), data.size());
  return BuildPayload([&](CodedOutputStream& out) {
    WriteDelimited(conn, out);
    WriteDelimited(header, out);
    WriteDelimited(body, out);
  });
}

std::string EncodeExceptionResponsePayload(ResponseStatus status, std::string_view name,
                                           std::string_view message) {
  pb::RpcConnHeader conn;
  conn.set_flag(kRpcFlagResponse);
  pb::ResponseHeader header;
  header.set_status(static_cast<pb::ResponseHeader::Status>(status));
  // The Java server omits protocolVer on FATAL responses (protocol.md §2.3).
  if (status != ResponseStatus::kFatal) header.set_protocolver(kRpcProtocolVersion);
  pb::RspExceptionBody body;
  body.set_exceptionname(name.data(), name.size());
  body.set_stacktrace(message.data(), message.size());
  return BuildPayload([&](CodedOutputStream& out) {
    WriteDelimited(conn, out);
    WriteDelimited(header, out);
    WriteDelimited(body, out);
  });
}

Status DecodeRequestPayload(std::string_view payload, RpcRequestView& request) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()),
                      static_cast<int>(payload.size()));
  pb::RpcConnHeader conn;
  pb::RequestHeader header;
  pb::RequestBody body;
  if (!ReadDelimited(in, payload.size(), conn) || !ReadDelimited(in, payload.size(), header) ||
      !ReadDelimited(in, payload.size(), body)) {
    return Status(ErrorCode::kProtocolError, "malformed request envelope");
  }
  request.service = static_cast<ServiceType>(header.servicetype());
  request.protocol_version = header.protocolver();
  request.method = body.method();
  request.timeout_ms = body.timeout();
  request.body = body.request();
  return Status::OK();
}

}  // namespace tubemq::codec
