// One typed RPC on a connection: serialize the method request, frame it with the
// envelope, and hand back the reply. Shared by the master session and the broker
// calls of every client, so the envelope is built in exactly one place.
#pragma once

#include <google/protobuf/message_lite.h>

#include <chrono>
#include <functional>

#include "codec/rpc_envelope.h"
#include "codec/rpc_methods.h"
#include "net/client_connection.h"

namespace tubemq::service {

// `status` is a transport failure, or OK with `reply` holding a success or an
// exception response (see ReplyStatus).
using ReplyCallback = std::function<void(const Status& status, codec::RpcReply&& reply)>;

// Sends an already serialized method request.
void SendSerialized(net::ClientConnection& connection, codec::Method method,
                    std::string_view request_body, std::chrono::milliseconds timeout,
                    ReplyCallback callback);

// `raw_fields`: more fields of `request`, already encoded (codec::EncodeRequestFrame).
// The frame reuses a buffer of a frame this connection has written.
void SendRequest(net::ClientConnection& connection, codec::Method method,
                 const google::protobuf::MessageLite& request, std::chrono::milliseconds timeout,
                 ReplyCallback callback,
                 std::initializer_list<std::string_view> raw_fields = {});

// OK for a success response, kRemoteException ("<class>#<message>") otherwise.
Status ReplyStatus(const codec::RpcReply& reply);

// Parses the method response carried by a success reply.
Status ParseReply(const codec::RpcReply& reply, google::protobuf::MessageLite& response);

}  // namespace tubemq::service
