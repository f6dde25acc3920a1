#include "codec/rpc_envelope.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include "RPC.pb.h"
#include "codec/big_endian.h"
#include "codec/frame_codec.h"

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

namespace {

using google::protobuf::io::ArrayOutputStream;

// Field tags of RequestBody (RPC.proto): method = 1 (varint), timeout = 2 (varint),
// request = 3 (length-delimited).
constexpr uint32_t kBodyMethodTag = (1 << 3) | 0;
constexpr uint32_t kBodyTimeoutTag = (2 << 3) | 0;
constexpr uint32_t kBodyRequestTag = (3 << 3) | 2;

// The request envelope of EncodeRequestPayload() with RequestBody written by hand, so
// that `request` is serialized into the output directly rather than into a string held
// by a RequestBody. The field order and encoding are those protobuf itself writes.
class RequestEnvelope {
 public:
  RequestEnvelope(Method method, int64_t server_timeout_ms, const MessageLite& request,
                  std::initializer_list<std::string_view> raw_fields)
      : method_(static_cast<int32_t>(method)),
        timeout_(server_timeout_ms > 0 ? server_timeout_ms : 1),
        request_(request),
        raw_fields_(raw_fields) {
    conn_.set_flag(kRpcFlagRequest);
    header_.set_servicetype(static_cast<int32_t>(ServiceTypeOf(method)));
    header_.set_protocolver(kRpcProtocolVersion);
    conn_size_ = conn_.ByteSizeLong();
    header_size_ = header_.ByteSizeLong();
    request_size_ = request_.ByteSizeLong();
    for (std::string_view raw : raw_fields_) request_size_ += raw.size();
    body_size_ = 1 + CodedOutputStream::VarintSize32SignExtended(method_) + 1 +
                 CodedOutputStream::VarintSize64(static_cast<uint64_t>(timeout_)) + 1 +
                 CodedOutputStream::VarintSize32(static_cast<uint32_t>(request_size_)) +
                 request_size_;
  }

  size_t size() const {
    return Delimited(conn_size_) + Delimited(header_size_) + Delimited(body_size_);
  }

  void Write(CodedOutputStream& out) const {
    out.WriteVarint32(static_cast<uint32_t>(conn_size_));
    conn_.SerializeWithCachedSizes(&out);
    out.WriteVarint32(static_cast<uint32_t>(header_size_));
    header_.SerializeWithCachedSizes(&out);
    out.WriteVarint32(static_cast<uint32_t>(body_size_));
    out.WriteTag(kBodyMethodTag);
    out.WriteVarint32SignExtended(method_);
    out.WriteTag(kBodyTimeoutTag);
    out.WriteVarint64(static_cast<uint64_t>(timeout_));
    out.WriteTag(kBodyRequestTag);
    out.WriteVarint32(static_cast<uint32_t>(request_size_));
    // ByteSizeLong() above cached the sizes this relies on.
    request_.SerializeWithCachedSizes(&out);
    for (std::string_view raw : raw_fields_) {
      out.WriteRaw(raw.data(), static_cast<int>(raw.size()));
    }
  }

 private:
  static size_t Delimited(size_t size) {
    return CodedOutputStream::VarintSize32(static_cast<uint32_t>(size)) + size;
  }

  const int32_t method_;
  const int64_t timeout_;
  const MessageLite& request_;
  const std::initializer_list<std::string_view> raw_fields_;
  pb::RpcConnHeader conn_;
  pb::RequestHeader header_;
  size_t conn_size_ = 0;
  size_t header_size_ = 0;
  size_t request_size_ = 0;
  size_t body_size_ = 0;
};

}  // namespace

std::string EncodeRequestFrame(Method method, int64_t server_timeout_ms,
                               const MessageLite& request,
                               std::initializer_list<std::string_view> raw_fields,
                               std::string buffer) {
  const RequestEnvelope envelope(method, server_timeout_ms, request, raw_fields);
  const size_t payload_size = envelope.size();
  if (payload_size > kWriteBlockSize) {
    // Several blocks: the block lengths interleave the payload, so it is built first.
    std::string payload = std::move(buffer);
    payload.resize(payload_size);
    {
      ArrayOutputStream stream(payload.data(), static_cast<int>(payload_size));
      CodedOutputStream out(&stream);
      envelope.Write(out);
    }
    return EncodeFrame(0, payload);
  }
  // One block: header, block length, then the payload written in place.
  constexpr size_t kPrefix = kFrameHeaderSize + 4;
  std::string frame = std::move(buffer);
  frame.resize(kPrefix + payload_size);
  char* out_bytes = frame.data();
  out_bytes = PutUint32(out_bytes, kFrameBeginToken);
  out_bytes = PutUint32(out_bytes, 0);
  out_bytes = PutUint32(out_bytes, 1);
  PutUint32(out_bytes, static_cast<uint32_t>(payload_size));
  {
    ArrayOutputStream stream(frame.data() + kPrefix, static_cast<int>(payload_size));
    CodedOutputStream out(&stream);
    envelope.Write(out);
  }
  return frame;
}

std::string LengthDelimitedKey(uint32_t field_number, size_t length) {
  uint8_t bytes[10];  // two varint32s at most
  uint8_t* end = CodedOutputStream::WriteTagToArray(
      google::protobuf::internal::WireFormatLite::MakeTag(
          static_cast<int>(field_number),
          google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED),
      bytes);
  end = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(length), end);
  return std::string(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
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
