// What a client does with an exception response (protocol.md §2.5). The server may
// rewrite the package prefix of the class name by protocol version, so only the
// simple class name (after the last '.') is compared.
#pragma once

#include <string>
#include <string_view>

#include "codec/rpc_envelope.h"
#include "tubemq/status.h"

namespace tubemq::codec {

enum class RemoteExceptionKind {
  kStandby,           // not the active master: switch to the next master address
  kNodeUnavailable,   // not ready or shutting down: treat like a connection failure
  kRequestRejected,   // anything else: fail this call, keep the connection and master
};

std::string_view SimpleClassName(std::string_view exception_name);
RemoteExceptionKind ClassifyRemoteException(std::string_view exception_name);

// The Status an exception reply turns into: kRemoteException with the text
// "<exceptionName>#<message>", which is how the Java and C++ clients report it.
Status RemoteExceptionStatus(const RpcReply& reply);

}  // namespace tubemq::codec
