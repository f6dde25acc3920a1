// Master failover (behaviour.md §1.1): a standby master's StandbyException or a dead
// address moves the call on to the next master; a refusal does not.
#include <gtest/gtest.h>

#include <future>

#include "MasterService.pb.h"
#include "scripted_server.h"
#include "service/master_session.h"
#include "service/tubemq_service.h"

namespace tubemq::service {
namespace {

using namespace std::chrono_literals;
using testing::Peer;
using testing::ScriptedServer;

// Answers every request with the given exception class.
ScriptedServer::Script AnswersException(std::string name) {
  return [name](Peer& peer) {
    int32_t serial;
    while (auto request = peer.ReadRequest(&serial)) {
      peer.Write(codec::EncodeFrame(
          serial, codec::EncodeExceptionResponsePayload(codec::ResponseStatus::kError, name,
                                                        "scripted")));
    }
  };
}

void ActiveMaster(Peer& peer) {
  int32_t serial;
  while (auto request = peer.ReadRequest(&serial)) {
    pb::CloseResponseM2P response;
    response.set_success(true);
    response.set_errcode(200);
    response.set_errmsg("OK");
    peer.Reply(serial, request->method, response.SerializeAsString());
  }
}

struct Outcome {
  Status status;
  size_t index = 0;
};

Outcome CallOnce(MasterSession& session) {
  pb::CloseRequestP2M request;
  request.set_clientid("c");
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  session.Call(codec::Method::kProducerClose, request, 3000ms,
               [promise](const Status& status, codec::RpcReply&&, size_t index) {
                 promise->set_value(Outcome{status, index});
               });
  EXPECT_EQ(future.wait_for(10s), std::future_status::ready);
  return future.get();
}

meta::Endpoint Local(uint16_t port) { return meta::Endpoint{"127.0.0.1", port}; }

TEST(MasterSession, StandbyAndDeadMastersAreSkippedAndTheActiveOneRemembered) {
  ServiceLease lease;
  uint16_t dead_port;
  {
    ScriptedServer gone(nullptr);
    dead_port = gone.port();
  }
  ScriptedServer standby(
      AnswersException("org.apache.inlong.tubemq.corerpc.exception.StandbyException"));
  ScriptedServer active(ActiveMaster);
  auto session = std::make_shared<MasterSession>(
      lease.engine_ptr(),
      std::vector<meta::Endpoint>{Local(dead_port), Local(standby.port()), Local(active.port())});
  const Outcome first = CallOnce(*session);
  EXPECT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_EQ(first.index, 2u);
  EXPECT_EQ(session->current_index(), 2u);
  // The next call goes straight to the active master.
  const int standby_connections = standby.accepted();
  EXPECT_TRUE(CallOnce(*session).status.ok());
  EXPECT_EQ(standby.accepted(), standby_connections);
  // The first answer is no switch: there was no master before it.
  EXPECT_EQ(session->switches(), 0u);
  EXPECT_EQ(session->standby_answers(), 1u);
}

TEST(MasterSession, ASwitchToAnotherActiveMasterIsCounted) {
  ServiceLease lease;
  auto first = std::make_unique<ScriptedServer>(ActiveMaster);
  ScriptedServer second(ActiveMaster);
  auto session = std::make_shared<MasterSession>(
      lease.engine_ptr(), std::vector<meta::Endpoint>{Local(first->port()), Local(second.port())});
  EXPECT_EQ(CallOnce(*session).index, 0u);
  first.reset();  // the active master dies; the next call lands on the other one
  const Outcome after = CallOnce(*session);
  EXPECT_TRUE(after.status.ok()) << after.status.ToString();
  EXPECT_EQ(after.index, 1u);
  EXPECT_EQ(session->switches(), 1u);
}

TEST(MasterSession, ARefusalIsFinalAndDoesNotSwitchMasters) {
  ServiceLease lease;
  ScriptedServer refusing(AnswersException("java.lang.Exception"));
  ScriptedServer active(ActiveMaster);
  auto session = std::make_shared<MasterSession>(
      lease.engine_ptr(), std::vector<meta::Endpoint>{Local(refusing.port()), Local(active.port())});
  const Outcome outcome = CallOnce(*session);
  EXPECT_EQ(outcome.status.code(), ErrorCode::kRemoteException);
  EXPECT_EQ(outcome.status.message(), "java.lang.Exception#scripted");
  EXPECT_EQ(active.accepted(), 0);
}

TEST(MasterSession, AllMastersFailingNamesEachOfThem) {
  ServiceLease lease;
  ScriptedServer standby(
      AnswersException("org.apache.inlong.tubemq.corerpc.exception.StandbyException"));
  ScriptedServer stopping(AnswersException("x.ServiceStoppingException"));
  auto session = std::make_shared<MasterSession>(
      lease.engine_ptr(), std::vector<meta::Endpoint>{Local(standby.port()), Local(stopping.port())});
  const Outcome outcome = CallOnce(*session);
  EXPECT_FALSE(outcome.status.ok());
  // A group electing its active master answers like this for a few seconds: retriable,
  // although a StandbyException on its own is not.
  EXPECT_TRUE(IsRetriable(outcome.status.code_value())) << outcome.status.ToString();
  EXPECT_EQ(session->standby_answers(), 1u);
  EXPECT_NE(outcome.status.message().find("no active master among 2"), std::string::npos);
  EXPECT_NE(outcome.status.message().find(std::to_string(standby.port())), std::string::npos);
  EXPECT_NE(outcome.status.message().find(std::to_string(stopping.port())), std::string::npos);
}

}  // namespace
}  // namespace tubemq::service
