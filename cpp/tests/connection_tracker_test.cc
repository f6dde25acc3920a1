// ConnectionTracker: each client counts the connections it had to open again because
// the previous one to the same address was lost; replacements of connections closed
// on purpose (idle recycling, Close()) do not count, and neither does a second client
// that only finds the replacement another client already made.
#include <gtest/gtest.h>

#include "call_recorder.h"
#include "net/connection_tracker.h"
#include "scripted_server.h"

namespace tubemq::net {
namespace {

using namespace std::chrono_literals;
using testing::Echo;
using testing::Eventually;
using testing::Peer;
using testing::Recorder;
using testing::ScriptedServer;

class ConnectionTrackerTest : public testing::IoThreadsTest {
 protected:
  static void CallAndWait(ClientConnection& connection) {
    Recorder recorder(1);
    connection.Call(Payload("x"), 3000ms, recorder.Track(1));
    ASSERT_TRUE(recorder.WaitAll(5s));
  }
};

// A server that resets its first session after one request and echoes on the others.
struct ResetOnceServer {
  std::atomic<int> sessions{0};
  ScriptedServer server{[this](Peer& peer) {
    if (++sessions == 1) {
      int32_t serial;
      if (peer.ReadRequest(&serial)) peer.Reset();
      return;
    }
    Echo(peer);
  }};
};

TEST_F(ConnectionTrackerTest, ALostConnectionCountsOnceForEachClientThatUsedIt) {
  ResetOnceServer peer;
  ConnectionPool pool(io_, ConnectionOptions{});
  const meta::Endpoint endpoint{"127.0.0.1", peer.server.port()};
  ConnectionTracker first_client(pool);
  ConnectionTracker second_client(pool);
  ConnectionTracker late_client(pool);

  auto shared = first_client.Get(endpoint);
  EXPECT_EQ(second_client.Get(endpoint), shared);
  CallAndWait(*shared);  // the server resets it
  ASSERT_TRUE(Eventually([&] { return shared->closed(); }));
  EXPECT_TRUE(shared->lost());

  // Whichever client asks first makes the replacement; both lost their connection.
  auto replacement = second_client.Get(endpoint);
  EXPECT_NE(replacement, shared);
  EXPECT_EQ(first_client.Get(endpoint), replacement);
  EXPECT_EQ(first_client.reconnects(), 1u);
  EXPECT_EQ(second_client.reconnects(), 1u);
  // A client that never used the lost one has not reconnected.
  EXPECT_EQ(late_client.Get(endpoint), replacement);
  EXPECT_EQ(late_client.reconnects(), 0u);
  // Asking again for a healthy connection counts nothing.
  EXPECT_EQ(first_client.Get(endpoint), replacement);
  EXPECT_EQ(first_client.reconnects(), 1u);
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
}

TEST_F(ConnectionTrackerTest, ConnectionsClosedOnPurposeAreReplacedWithoutCounting) {
  ScriptedServer server(Echo);
  ConnectionPool pool(io_, ConnectionOptions{});
  const meta::Endpoint endpoint{"127.0.0.1", server.port()};
  ConnectionTracker client(pool);

  auto first = client.Get(endpoint);
  CallAndWait(*first);
  ASSERT_TRUE(Eventually(
      [&] { return ClientConnection::Clock::now() - first->last_activity() > 20ms; }));
  EXPECT_EQ(pool.CloseIdle(10ms), 1u);
  ASSERT_TRUE(Eventually([&] { return first->closed(); }));
  EXPECT_FALSE(first->lost());
  auto second = client.Get(endpoint);
  EXPECT_NE(second, first);

  second->Close(Status(ErrorCode::kConnectionClosed, "master is not active"));
  ASSERT_TRUE(Eventually([&] { return second->closed(); }));
  EXPECT_NE(client.Get(endpoint), second);
  EXPECT_EQ(client.reconnects(), 0u);
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
}

TEST_F(ConnectionTrackerTest, AFailedConnectCountsAsLost) {
  uint16_t closed_port;
  {
    ScriptedServer gone(Echo);
    closed_port = gone.port();
  }  // nothing listens there any more
  ConnectionPool pool(io_, ConnectionOptions{});
  ConnectionTracker client(pool);
  const meta::Endpoint endpoint{"127.0.0.1", closed_port};
  auto refused = client.Get(endpoint);
  Recorder recorder(1);
  refused->Call(Payload("x"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kConnectFailed);
  EXPECT_TRUE(refused->lost());
  client.Get(endpoint);
  EXPECT_EQ(client.reconnects(), 1u);
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
}

}  // namespace
}  // namespace tubemq::net
