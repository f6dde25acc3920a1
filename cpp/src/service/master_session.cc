#include "service/master_session.h"

#include "codec/remote_exception.h"
#include "log/log.h"

namespace tubemq::service {

struct MasterSession::Attempt {
  codec::Method method;
  std::string body;  // serialized once, re-sent as is to each master
  std::chrono::milliseconds timeout;
  Callback callback;
  size_t index = 0;
  size_t tried = 0;
  std::string errors;  // one line per failed master, for the final message
};

MasterSession::MasterSession(std::shared_ptr<IoEngine> engine,
                             std::vector<meta::Endpoint> masters,
                             std::shared_ptr<net::TlsContext> tls)
    : engine_(std::move(engine)),
      connections_(engine_->pool(), std::move(tls)),
      masters_(std::move(masters)) {}

void MasterSession::Call(codec::Method method, const google::protobuf::MessageLite& request,
                         std::chrono::milliseconds timeout, Callback callback) {
  auto attempt = std::make_shared<Attempt>();
  attempt->method = method;
  attempt->body = request.SerializeAsString();
  attempt->timeout = timeout;
  attempt->callback = std::move(callback);
  attempt->index = current_.load();
  Try(std::move(attempt));
}

void MasterSession::Try(std::shared_ptr<Attempt> attempt) {
  const meta::Endpoint& master = masters_[attempt->index % masters_.size()];
  auto connection = connections_.Get(master);
  SendSerialized(
      *connection, attempt->method, attempt->body, attempt->timeout,
      [this, self = shared_from_this(), attempt, connection](const Status& status,
                                                             codec::RpcReply&& reply) {
        const size_t index = attempt->index % masters_.size();
        Status failure = status;
        if (status.ok() && reply.status != codec::ResponseStatus::kSuccess) {
          const auto kind = codec::ClassifyRemoteException(reply.exception_name);
          if (kind == codec::RemoteExceptionKind::kRequestRejected) {
            // The master read the request and refused it: switching masters would
            // not change the answer.
            attempt->callback(ReplyStatus(reply), std::move(reply), index);
            return;
          }
          failure = ReplyStatus(reply);
          if (kind == codec::RemoteExceptionKind::kStandby) standby_answers_.fetch_add(1);
          // A standby or stopping master keeps answering the same way on this
          // connection; drop it so a later call reconnects (it may have changed role).
          connection->Close(Status(ErrorCode::kConnectionClosed, "master is not active"));
        }
        if (failure.ok()) {
          const size_t previous = current_.exchange(index);
          if (answered_.exchange(true) && previous != index) switches_.fetch_add(1);
          attempt->callback(Status::OK(), std::move(reply), index);
          return;
        }
        attempt->errors += "\n  " + masters_[index].ToString() + ": " + failure.message();
        if (++attempt->tried >= masters_.size()) {
          // Every master was unreachable, standby or stopping: while a master group
          // elects a new active master (a few seconds) that is what all of them say, so
          // a round ended by such an answer is one a later try can cure. A local failure
          // (the I/O service stopping under the call) keeps its own code.
          const ErrorCode code = failure.code() == ErrorCode::kRemoteException
                                     ? ErrorCode::kServiceUnavailable
                                     : failure.code();
          attempt->callback(
              Status(code, "no active master among " + std::to_string(masters_.size()) +
                               " address(es):" + attempt->errors),
              codec::RpcReply{}, index);
          return;
        }
        TUBEMQ_LOG_INFO("master " << masters_[index].ToString() << " failed ("
                                  << failure.message() << "); trying the next one");
        ++attempt->index;
        Try(attempt);
      });
}

}  // namespace tubemq::service
