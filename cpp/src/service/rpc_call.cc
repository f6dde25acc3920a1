#include "service/rpc_call.h"

#include "codec/remote_exception.h"

namespace tubemq::service {

void SendSerialized(net::ClientConnection& connection, codec::Method method,
                    std::string_view request_body, std::chrono::milliseconds timeout,
                    ReplyCallback callback) {
  // The server gets the same deadline as the client waits: an answer it would write
  // after that could only be thrown away here (protocol.md §2.6).
  std::string payload = codec::EncodeRequestPayload(method, timeout.count(), request_body);
  connection.Call(std::move(payload), timeout, std::move(callback));
}

void SendRequest(net::ClientConnection& connection, codec::Method method,
                 const google::protobuf::MessageLite& request, std::chrono::milliseconds timeout,
                 ReplyCallback callback, std::initializer_list<std::string_view> raw_fields) {
  // Serialized once, straight into the frame (no intermediate strings).
  connection.CallFrame(codec::EncodeRequestFrame(method, timeout.count(), request, raw_fields,
                                                 connection.TakeFrameBuffer()),
                       timeout, std::move(callback));
}

Status ReplyStatus(const codec::RpcReply& reply) {
  if (reply.status == codec::ResponseStatus::kSuccess) return Status::OK();
  return codec::RemoteExceptionStatus(reply);
}

Status ParseReply(const codec::RpcReply& reply, google::protobuf::MessageLite& response) {
  Status status = ReplyStatus(reply);
  if (!status.ok()) return status;
  if (!response.ParseFromString(reply.data)) {
    return Status(ErrorCode::kProtocolError,
                  "cannot parse the " + response.GetTypeName() + " in the reply");
  }
  return Status::OK();
}

}  // namespace tubemq::service
