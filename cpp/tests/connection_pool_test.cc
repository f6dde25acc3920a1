// ConnectionPool: one connection per remote "host:port", shared by every caller;
// closed connections are replaced on the next Get(); idle ones are recycled.
#include <gtest/gtest.h>

#include <thread>

#include "call_recorder.h"
#include "net/connection_pool.h"
#include "scripted_server.h"

namespace tubemq::net {
namespace {

using namespace std::chrono_literals;
using testing::Echo;
using testing::Eventually;
using testing::Peer;
using testing::Recorder;
using testing::ScriptedServer;

using ConnectionPoolTest = testing::IoThreadsTest;

TEST_F(ConnectionPoolTest, SameAddressSharesOneConnectionEvenFromManyThreads) {
  ScriptedServer server(Echo);
  ConnectionPool pool(io_, ConnectionOptions{});
  const meta::Endpoint endpoint{"127.0.0.1", server.port()};
  std::vector<std::shared_ptr<ClientConnection>> got(8);
  std::vector<std::thread> getters;
  for (size_t i = 0; i < got.size(); ++i) {
    getters.emplace_back([&, i] { got[i] = pool.Get(endpoint); });
  }
  for (auto& getter : getters) getter.join();
  for (const auto& connection : got) EXPECT_EQ(connection, got[0]);
  EXPECT_EQ(pool.size(), 1u);

  // Calls through any handle go over the one TCP connection.
  Recorder recorder(got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    got[i]->Call(Payload("x"), 3000ms, recorder.Track(static_cast<int>(i)));
  }
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(server.accepted(), 1);
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
}

TEST_F(ConnectionPoolTest, DifferentPortsGetDifferentConnections) {
  ScriptedServer first(Echo);
  ScriptedServer second(Echo);
  ConnectionPool pool(io_, ConnectionOptions{});
  auto a = pool.Get(meta::Endpoint{"127.0.0.1", first.port()});
  auto b = pool.Get(meta::Endpoint{"127.0.0.1", second.port()});
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_EQ(a->endpoint().port, first.port());
  EXPECT_EQ(b->endpoint().port, second.port());
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(ConnectionPoolTest, ConnectionClosedByThePeerIsReplacedOnTheNextGet) {
  // The first connection is reset by the server after one request; later ones echo.
  std::atomic<int> sessions{0};
  ScriptedServer server([&](Peer& peer) {
    if (++sessions == 1) {
      int32_t serial;
      if (peer.ReadRequest(&serial)) peer.Reset();
      return;
    }
    Echo(peer);
  });
  ConnectionPool pool(io_, ConnectionOptions{});
  const meta::Endpoint endpoint{"127.0.0.1", server.port()};
  auto first = pool.Get(endpoint);
  Recorder failed(1);
  first->Call(Payload("a"), 3000ms, failed.Track(1));
  ASSERT_TRUE(failed.WaitAll(5s));
  EXPECT_EQ(failed.Get(1).status.code(), ErrorCode::kConnectionClosed);
  ASSERT_TRUE(first->closed());

  auto second = pool.Get(endpoint);
  EXPECT_NE(second, first);
  EXPECT_EQ(pool.size(), 1u);
  Recorder ok(1);
  second->Call(Payload("b"), 3000ms, ok.Track(2));
  ASSERT_TRUE(ok.WaitAll(5s));
  EXPECT_TRUE(ok.Get(2).status.ok()) << ok.Get(2).status.ToString();
  EXPECT_EQ(ok.Get(2).reply.data, "b");
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
}

TEST_F(ConnectionPoolTest, IdleConnectionsAreRecycledAndReplaced) {
  ScriptedServer server(Echo);
  ConnectionPool pool(io_, ConnectionOptions{});
  const meta::Endpoint endpoint{"127.0.0.1", server.port()};
  auto first = pool.Get(endpoint);
  Recorder recorder(1);
  first->Call(Payload("a"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(pool.CloseIdle(10000ms), 0u);  // just used
  // Wait until the connection is older than the idle bound used below.
  ASSERT_TRUE(Eventually(
      [&] { return ClientConnection::Clock::now() - first->last_activity() > 20ms; }));
  EXPECT_EQ(pool.CloseIdle(10ms), 1u);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(Eventually([&] { return first->closed(); }));
  auto second = pool.Get(endpoint);
  EXPECT_NE(second, first);
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
  EXPECT_TRUE(Eventually([&] { return second->closed(); }));
}

TEST_F(ConnectionPoolTest, ConnectionWithAPendingRequestIsNotRecycled) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    while (peer.ReadRequest(&serial)) {
    }
  });
  ConnectionPool pool(io_, ConnectionOptions{});
  auto connection = pool.Get(meta::Endpoint{"127.0.0.1", server.port()});
  Recorder recorder(1);
  connection->Call(Payload("never answered"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(Eventually([&] { return connection->pending_count() == 1; }));
  ASSERT_TRUE(Eventually(
      [&] { return ClientConnection::Clock::now() - connection->last_activity() > 20ms; }));
  EXPECT_EQ(pool.CloseIdle(10ms), 0u);
  EXPECT_FALSE(connection->closed());
  EXPECT_EQ(pool.size(), 1u);

  // CloseAll fails the pending request with the given reason and empties the pool.
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "shutting down"));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kServiceStopped);
  EXPECT_EQ(recorder.Calls(1), 1);
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
}  // namespace tubemq::net
