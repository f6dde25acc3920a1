#include "codec/remote_exception.h"

namespace tubemq::codec {

std::string_view SimpleClassName(std::string_view exception_name) {
  const size_t dot = exception_name.rfind('.');
  return dot == std::string_view::npos ? exception_name : exception_name.substr(dot + 1);
}

RemoteExceptionKind ClassifyRemoteException(std::string_view exception_name) {
  const std::string_view simple = SimpleClassName(exception_name);
  if (simple == "StandbyException") return RemoteExceptionKind::kStandby;
  if (simple == "ServerNotReadyException" || simple == "ServiceStoppingException") {
    return RemoteExceptionKind::kNodeUnavailable;
  }
  return RemoteExceptionKind::kRequestRejected;
}

Status RemoteExceptionStatus(const RpcReply& reply) {
  return Status(ErrorCode::kRemoteException, reply.exception_name + "#" + reply.exception_message);
}

}  // namespace tubemq::codec
