// ClientConnection against a scripted server that misbehaves: late, out of order,
// resetting, sending garbage or truncated frames. Every request must end exactly once.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <future>
#include <map>
#include <set>

#include "net/client_connection.h"
#include "net/connection_pool.h"
#include "scripted_server.h"

namespace tubemq::net {
namespace {

using namespace std::chrono_literals;
using testing::Peer;
using testing::ScriptedServer;

struct Outcome {
  Status status;
  codec::RpcReply reply;
};

// Counts completions per request, so a second completion of any request is caught.
class Recorder {
 public:
  explicit Recorder(size_t expected) : expected_(expected) {}
  ClientConnection::Callback Track(int id) {
    return [this, id](const Status& status, codec::RpcReply&& reply) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++calls_[id];
      outcomes_[id] = Outcome{status, std::move(reply)};
      if (++total_ == expected_) done_.set_value();
    };
  }
  bool WaitAll(std::chrono::milliseconds wait) {
    return done_future_.wait_for(wait) == std::future_status::ready;
  }
  int Calls(int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_[id];
  }
  Outcome Get(int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return outcomes_[id];
  }
  size_t Total() {
    std::lock_guard<std::mutex> lock(mutex_);
    return total_;
  }

 private:
  const size_t expected_;
  std::mutex mutex_;
  std::map<int, int> calls_;
  std::map<int, Outcome> outcomes_;
  size_t total_ = 0;
  std::promise<void> done_;
  std::future<void> done_future_ = done_.get_future();
};

class ClientConnectionTest : public ::testing::Test {
 protected:
  ClientConnectionTest() : work_(asio::make_work_guard(io_)) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~ClientConnectionTest() override {
    work_.reset();
    io_.stop();
    for (auto& thread : threads_) thread.join();
  }

  std::shared_ptr<ClientConnection> Connect(uint16_t port,
                                            std::chrono::milliseconds connect_timeout = 2000ms) {
    ConnectionOptions options;
    options.connect_timeout = connect_timeout;
    return ClientConnection::Create(io_, Endpoint{"127.0.0.1", port}, options);
  }

  static std::string Payload(const std::string& body) {
    return codec::EncodeRequestPayload(codec::Method::kProducerHeartbeat, 5000, body);
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

// Closing happens on the connection's strand, so its effect is awaited, within a bound.
template <typename Predicate>
bool Eventually(Predicate predicate) {
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Replies to every request with its own body, immediately.
void Echo(Peer& peer) {
  int32_t serial;
  while (auto request = peer.ReadRequest(&serial)) {
    peer.Reply(serial, request->method, request->body);
  }
}

TEST_F(ClientConnectionTest, RequestGetsItsReply) {
  ScriptedServer server(Echo);
  auto connection = Connect(server.port());
  Recorder recorder(1);
  connection->Call(Payload("ping"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  const Outcome outcome = recorder.Get(1);
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.ToString();
  EXPECT_EQ(outcome.reply.data, "ping");
  EXPECT_EQ(outcome.reply.method, 2);
}

TEST_F(ClientConnectionTest, PipelinedRepliesInReverseOrderReachTheirRequests) {
  ScriptedServer server([](Peer& peer) {
    std::vector<std::pair<int32_t, std::string>> received;
    int32_t serial;
    for (int i = 0; i < 5; ++i) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      received.emplace_back(serial, request->body);
    }
    std::set<int32_t> serials;
    for (const auto& item : received) serials.insert(item.first);
    if (serials.size() != received.size()) return;  // serials must be unique
    for (auto it = received.rbegin(); it != received.rend(); ++it) {
      peer.Reply(it->first, 2, it->second);
    }
    Echo(peer);
  });
  auto connection = Connect(server.port());
  Recorder recorder(5);
  for (int i = 0; i < 5; ++i) {
    connection->Call(Payload("request-" + std::to_string(i)), 3000ms, recorder.Track(i));
  }
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(recorder.Get(i).status.ok());
    EXPECT_EQ(recorder.Get(i).reply.data, "request-" + std::to_string(i));
    EXPECT_EQ(recorder.Calls(i), 1);
  }
}

TEST_F(ClientConnectionTest, SlowReplyTimesOutWithoutHarmingOthers) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    while (auto request = peer.ReadRequest(&serial)) {
      if (request->body == "slow") continue;  // never answered
      peer.Reply(serial, request->method, request->body);
    }
  });
  auto connection = Connect(server.port());
  Recorder recorder(2);
  const auto started = std::chrono::steady_clock::now();
  connection->Call(Payload("slow"), 300ms, recorder.Track(1));
  connection->Call(Payload("fast"), 3000ms, recorder.Track(2));
  ASSERT_TRUE(recorder.WaitAll(5s));
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kRequestTimeout);
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 3000ms);
  EXPECT_TRUE(recorder.Get(2).status.ok());
  EXPECT_FALSE(connection->closed());
  EXPECT_EQ(connection->pending_count(), 0u);
  // The connection still works after a timeout.
  Recorder again(1);
  connection->Call(Payload("fast"), 3000ms, again.Track(3));
  ASSERT_TRUE(again.WaitAll(5s));
  EXPECT_TRUE(again.Get(3).status.ok());
}

TEST_F(ClientConnectionTest, ResetInTheMiddleOfAFrameFailsEveryPendingRequestOnce) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    for (int i = 0; i < 3; ++i) {
      if (!peer.ReadRequest(&serial)) return;
    }
    const std::string frame =
        codec::EncodeFrame(serial, codec::EncodeSuccessResponsePayload(2, "never-complete"));
    peer.Write(frame.substr(0, frame.size() / 2));
    std::this_thread::sleep_for(50ms);
    peer.Reset();
  });
  auto connection = Connect(server.port());
  Recorder recorder(3);
  for (int i = 0; i < 3; ++i) connection->Call(Payload("x"), 5000ms, recorder.Track(i));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(recorder.Get(i).status.code(), ErrorCode::kConnectionClosed)
        << recorder.Get(i).status.ToString();
    EXPECT_EQ(recorder.Calls(i), 1);
  }
  EXPECT_TRUE(connection->closed());
  // Later calls fail at once with the same reason, never hang.
  Recorder later(1);
  connection->Call(Payload("late"), 5000ms, later.Track(9));
  ASSERT_TRUE(later.WaitAll(2s));
  EXPECT_EQ(later.Get(9).status.code(), ErrorCode::kConnectionClosed);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(recorder.Total(), 3u);  // nothing completed twice, even after the deadlines
}

TEST_F(ClientConnectionTest, GarbageBytesAreAProtocolErrorThatClosesTheConnection) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    if (!peer.ReadRequest(&serial)) return;
    peer.Write("HTTP/1.1 400 Bad Request\r\n\r\n");
    peer.ReadRequest(&serial, 2000ms);  // wait for the client to hang up
  });
  auto connection = Connect(server.port());
  Recorder recorder(2);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  connection->Call(Payload("b"), 5000ms, recorder.Track(2));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int id : {1, 2}) {
    EXPECT_EQ(recorder.Get(id).status.code(), ErrorCode::kProtocolError);
    EXPECT_NE(recorder.Get(id).status.message().find("127.0.0.1:"), std::string::npos);
  }
  EXPECT_TRUE(connection->closed());
}

TEST_F(ClientConnectionTest, ValidFrameWithAnUnparsableEnvelopeIsAProtocolError) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    if (!peer.ReadRequest(&serial)) return;
    peer.Write(codec::EncodeFrame(serial, "\x7F\x01\x02"));
    peer.ReadRequest(&serial, 2000ms);
  });
  auto connection = Connect(server.port());
  Recorder recorder(1);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kProtocolError);
}

TEST_F(ClientConnectionTest, TruncatedFrameThenCloseIsAConnectionError) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    if (!peer.ReadRequest(&serial)) return;
    peer.Write(codec::EncodeFrame(serial, codec::EncodeSuccessResponsePayload(2, "abc"))
                   .substr(0, 14));
    peer.Close();
  });
  auto connection = Connect(server.port());
  Recorder recorder(1);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  const Status status = recorder.Get(1).status;
  EXPECT_EQ(status.code(), ErrorCode::kConnectionClosed);
  EXPECT_NE(status.message().find("middle of a frame"), std::string::npos) << status.message();
}

TEST_F(ClientConnectionTest, RepliesToUnknownSerialsAreIgnored) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    auto request = peer.ReadRequest(&serial);
    if (!request) return;
    peer.Reply(serial + 1000, 2, "stray");
    peer.Reply(serial, 2, "mine");
  });
  auto connection = Connect(server.port());
  Recorder recorder(1);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_TRUE(recorder.Get(1).status.ok());
  EXPECT_EQ(recorder.Get(1).reply.data, "mine");
}

TEST_F(ClientConnectionTest, ExceptionRepliesArriveAsReplies) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    if (!peer.ReadRequest(&serial)) return;
    peer.Write(codec::EncodeFrame(
        serial, codec::EncodeExceptionResponsePayload(codec::ResponseStatus::kError,
                                                      "java.lang.Exception", "No service")));
    peer.ReadRequest(&serial, 1000ms);
  });
  auto connection = Connect(server.port());
  Recorder recorder(1);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  const Outcome outcome = recorder.Get(1);
  EXPECT_TRUE(outcome.status.ok());
  EXPECT_EQ(outcome.reply.status, codec::ResponseStatus::kError);
  EXPECT_EQ(outcome.reply.exception_message, "No service");
  EXPECT_FALSE(connection->closed());
}

TEST_F(ClientConnectionTest, RefusedConnectFailsTheRequest) {
  uint16_t port;
  {
    ScriptedServer closed(nullptr);  // bound, then released: nothing listens there now
    port = closed.port();
  }
  auto connection = Connect(port);
  Recorder recorder(1);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kConnectFailed);
  EXPECT_NE(recorder.Get(1).status.message().find(std::to_string(port)), std::string::npos);
}

TEST_F(ClientConnectionTest, ConnectThatNeverCompletesTimesOut) {
  // A listener that never accepts, with a backlog filled by our own raw connects: the
  // kernel then drops further SYNs, so a connect hangs until our timeout fires.
  ScriptedServer server(nullptr, /*backlog=*/0);
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(server.port());
    ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(50ms);
  auto connection = Connect(server.port(), 300ms);
  Recorder recorder(1);
  const auto started = std::chrono::steady_clock::now();
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  const auto elapsed = std::chrono::steady_clock::now() - started;
  for (int fd : fillers) ::close(fd);
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kConnectFailed)
      << recorder.Get(1).status.ToString();
  EXPECT_LT(elapsed, 2000ms);
}

TEST_F(ClientConnectionTest, CloseFailsPendingRequestsWithTheGivenReason) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    while (peer.ReadRequest(&serial)) {
    }
  });
  auto connection = Connect(server.port());
  Recorder recorder(10);
  for (int i = 0; i < 10; ++i) connection->Call(Payload("x"), 10000ms, recorder.Track(i));
  std::this_thread::sleep_for(100ms);
  connection->Close(Status(ErrorCode::kServiceStopped, "stopping"));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(recorder.Get(i).status.code(), ErrorCode::kServiceStopped);
    EXPECT_EQ(recorder.Calls(i), 1);
  }
}

TEST_F(ClientConnectionTest, ManyRequestsAgainstAServerThatDiesHalfwayEachEndOnce) {
  constexpr int kRequests = 300;
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    for (int answered = 0; answered < kRequests / 2; ++answered) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      peer.Reply(serial, request->method, request->body);
    }
    // A FIN, not a reset (a reset may discard replies the client has not read yet);
    // requests still arriving are read and ignored.
    peer.HalfClose();
    while (peer.ReadRequest(&serial, 2000ms)) {
    }
  });
  auto connection = Connect(server.port());
  Recorder recorder(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    connection->Call(Payload(std::to_string(i)), 10000ms, recorder.Track(i));
  }
  ASSERT_TRUE(recorder.WaitAll(10s));
  int ok = 0;
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(recorder.Calls(i), 1) << i;
    const Outcome outcome = recorder.Get(i);
    if (outcome.status.ok()) {
      EXPECT_EQ(outcome.reply.data, std::to_string(i));
      ++ok;
    } else {
      EXPECT_EQ(outcome.status.code(), ErrorCode::kConnectionClosed);
    }
  }
  EXPECT_EQ(ok, kRequests / 2);
}

TEST_F(ClientConnectionTest, PoolSharesOneConnectionPerAddressAndRecyclesIdleOnes) {
  ScriptedServer server(Echo);
  ConnectionPool pool(io_, ConnectionOptions{});
  const Endpoint endpoint{"127.0.0.1", server.port()};
  auto first = pool.Get(endpoint);
  EXPECT_EQ(pool.Get(endpoint), first);
  EXPECT_EQ(pool.size(), 1u);

  Recorder recorder(1);
  first->Call(Payload("a"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(pool.CloseIdle(10000ms), 0u);  // just used
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(pool.CloseIdle(10ms), 1u);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(Eventually([&] { return first->closed(); }));
  auto second = pool.Get(endpoint);
  EXPECT_NE(second, first);  // a closed connection is replaced
  pool.CloseAll(Status(ErrorCode::kServiceStopped, "done"));
  EXPECT_TRUE(Eventually([&] { return second->closed(); }));
}

}  // namespace
}  // namespace tubemq::net
