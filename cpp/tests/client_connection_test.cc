// ClientConnection against a scripted server on 127.0.0.1 that misbehaves: late, out
// of order, resetting, sending garbage or truncated frames, never accepting. Every
// request must end exactly once: with its reply, its timeout, or the transport error.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <atomic>
#include <future>
#include <set>
#include <stdexcept>

#include "call_recorder.h"
#include "codec/big_endian.h"
#include "net/client_connection.h"
#include "net/read_watermark.h"
#include "scripted_server.h"
#include "test_bytes.h"

namespace tubemq::net {
namespace {

using namespace std::chrono_literals;
using testing::Echo;
using testing::Eventually;
using testing::Outcome;
using testing::Peer;
using testing::Recorder;
using testing::ScriptedServer;
using testing::ToHex;

using ClientConnectionTest = testing::IoThreadsTest;

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

TEST_F(ClientConnectionTest, AConnectProbeSaysWhetherTheAddressTakesConnections) {
  ScriptedServer server(Echo);
  auto open = Connect(server.port());
  std::promise<Status> opened;
  open->Connect([&opened](const Status& status) { opened.set_value(status); });
  auto first = opened.get_future();
  ASSERT_EQ(first.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(Eventually([&] { return server.accepted() == 1; }, 5s));
  // The probed connection then carries requests like any other.
  Recorder recorder(1);
  open->Call(Payload("after"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_TRUE(recorder.Get(1).status.ok());

  uint16_t port;
  {
    ScriptedServer closed(nullptr);  // bound, then released: nothing listens there now
    port = closed.port();
  }
  auto refused = Connect(port);
  std::promise<Status> failed;
  refused->Connect([&failed](const Status& status) { failed.set_value(status); });
  auto second = failed.get_future();
  ASSERT_EQ(second.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(second.get().code(), ErrorCode::kConnectFailed);
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
  // The connect timer ended it, not a refusal (which would be immediate).
  EXPECT_NE(recorder.Get(1).status.message().find("timed out"), std::string::npos)
      << recorder.Get(1).status.message();
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 2000ms);
  EXPECT_EQ(recorder.Calls(1), 1);
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

TEST_F(ClientConnectionTest, FirstFrameIsByteExactWithSerialOneAndSerialsThenCount) {
  // protocol.md §1.4: the per-connection counter starts at 1 and increments by one;
  // §10 items 1, 2 and 5: the frame starts with the token, bytes 4-7 are the serial.
  const std::string first_payload = Payload("first");
  const std::string first_frame = codec::EncodeFrame(1, first_payload);
  std::promise<std::string> raw_first;
  std::mutex mutex;
  std::vector<int32_t> later_serials;
  ScriptedServer server([&](Peer& peer) {
    const std::string raw = peer.ReadRaw(first_frame.size());
    raw_first.set_value(raw);
    if (raw.size() != first_frame.size()) return;
    const auto serial = static_cast<int32_t>(codec::GetUint32(testing::Bytes(raw) + 4));
    peer.Reply(serial, 2, "first");
    int32_t next;
    while (auto request = peer.ReadRequest(&next)) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        later_serials.push_back(next);
      }
      peer.Reply(next, request->method, request->body);
    }
  });
  auto connection = Connect(server.port());
  for (int i = 0; i < 3; ++i) {
    Recorder recorder(1);
    connection->Call(i == 0 ? first_payload : Payload("more"), 3000ms, recorder.Track(i));
    ASSERT_TRUE(recorder.WaitAll(5s));
    ASSERT_TRUE(recorder.Get(i).status.ok()) << recorder.Get(i).status.ToString();
  }
  auto raw = raw_first.get_future();
  ASSERT_EQ(raw.wait_for(1s), std::future_status::ready);
  EXPECT_EQ(ToHex(raw.get()), ToHex(first_frame));
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(later_serials, (std::vector<int32_t>{2, 3}));
}

TEST_F(ClientConnectionTest, LateReplyAfterTheDeadlineIsDiscarded) {
  ScriptedServer server([](Peer& peer) {
    int32_t slow_serial;
    int32_t serial;
    if (!peer.ReadRequest(&slow_serial)) return;
    // The next request is only sent once the slow one has timed out on the client.
    auto next = peer.ReadRequest(&serial);
    if (!next) return;
    peer.Reply(slow_serial, 2, "late");
    peer.Reply(serial, 2, next->body);
    Echo(peer);
  });
  auto connection = Connect(server.port());
  Recorder slow(1);
  connection->Call(Payload("slow"), 200ms, slow.Track(1));
  ASSERT_TRUE(slow.WaitAll(5s));
  EXPECT_EQ(slow.Get(1).status.code(), ErrorCode::kRequestTimeout);

  Recorder next(1);
  connection->Call(Payload("next"), 3000ms, next.Track(2));
  ASSERT_TRUE(next.WaitAll(5s));
  // The late reply came first on the stream, so it has been handled by now: dropped.
  EXPECT_TRUE(next.Get(2).status.ok());
  EXPECT_EQ(next.Get(2).reply.data, "next");
  EXPECT_EQ(slow.Total(), 1u);
  EXPECT_EQ(slow.Get(1).status.code(), ErrorCode::kRequestTimeout);
  EXPECT_FALSE(connection->closed());
}

TEST_F(ClientConnectionTest, BlockCountOverTheJavaLimitClosesTheConnection) {
  // §10 item 25: a framing error (listSize > 3584) closes the connection.
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    if (!peer.ReadRequest(&serial)) return;
    std::string header(12, '\0');
    codec::PutUint32(header.data(), codec::kFrameBeginToken);
    codec::PutUint32(header.data() + 4, static_cast<uint32_t>(serial));
    codec::PutUint32(header.data() + 8, 3585);
    peer.Write(header);
    peer.ReadRequest(&serial, 2000ms);  // until the client hangs up
  });
  auto connection = Connect(server.port());
  Recorder recorder(2);
  connection->Call(Payload("a"), 5000ms, recorder.Track(1));
  connection->Call(Payload("b"), 5000ms, recorder.Track(2));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int id : {1, 2}) {
    EXPECT_EQ(recorder.Get(id).status.code(), ErrorCode::kProtocolError);
    EXPECT_EQ(recorder.Calls(id), 1);
  }
  EXPECT_NE(recorder.Get(1).status.message().find("block count"), std::string::npos)
      << recorder.Get(1).status.message();
  EXPECT_TRUE(connection->closed());
}

TEST_F(ClientConnectionTest, RepliesInTinyPiecesAndCoalescedRepliesAreReassembled) {
  ScriptedServer server([](Peer& peer) {
    std::vector<std::pair<int32_t, std::string>> requests;
    int32_t serial;
    for (int i = 0; i < 3; ++i) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      requests.emplace_back(serial, request->body);
    }
    auto frame = [](const std::pair<int32_t, std::string>& request) {
      return codec::EncodeFrame(request.first,
                                codec::EncodeSuccessResponsePayload(2, request.second));
    };
    peer.WriteInPieces(frame(requests[0]), 1);             // one byte per send
    peer.Write(frame(requests[1]) + frame(requests[2]));   // two frames in one send
    Echo(peer);
  });
  auto connection = Connect(server.port());
  Recorder recorder(3);
  for (int i = 0; i < 3; ++i) {
    connection->Call(Payload("piece-" + std::to_string(i)), 5000ms, recorder.Track(i));
  }
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(recorder.Get(i).status.ok()) << recorder.Get(i).status.ToString();
    EXPECT_EQ(recorder.Get(i).reply.data, "piece-" + std::to_string(i));
  }
}

TEST_F(ClientConnectionTest, MultiBlockRequestAndReplyRoundTrip) {
  ScriptedServer server(Echo);
  auto connection = Connect(server.port());
  std::string body(100000, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 131) >> 3);
  Recorder recorder(1);
  connection->Call(Payload(body), 5000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  ASSERT_TRUE(recorder.Get(1).status.ok()) << recorder.Get(1).status.ToString();
  EXPECT_EQ(recorder.Get(1).reply.data, body);
}

TEST_F(ClientConnectionTest, ConcurrentCallersGetTheirOwnRepliesUnderUniqueSerials) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::mutex mutex;
  std::set<int32_t> serials;
  int duplicates = 0;
  ScriptedServer server([&](Peer& peer) {
    int32_t serial;
    while (auto request = peer.ReadRequest(&serial)) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!serials.insert(serial).second) ++duplicates;
      }
      peer.Reply(serial, request->method, request->body);
    }
  });
  auto connection = Connect(server.port());
  Recorder recorder(kThreads * kPerThread);
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int id = t * kPerThread + i;
        connection->Call(Payload(std::to_string(id)), 10000ms, recorder.Track(id));
      }
    });
  }
  for (auto& caller : callers) caller.join();
  ASSERT_TRUE(recorder.WaitAll(10s));
  for (int id = 0; id < kThreads * kPerThread; ++id) {
    EXPECT_EQ(recorder.Calls(id), 1) << id;
    EXPECT_EQ(recorder.Get(id).reply.data, std::to_string(id)) << id;
  }
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(serials.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST_F(ClientConnectionTest, ThrowingCallbackDoesNotDisturbOtherRequests) {
  ScriptedServer server(Echo);
  auto connection = Connect(server.port());
  std::atomic<int> thrower_calls{0};
  std::promise<void> thrown;
  connection->Call(Payload("a"), 3000ms, [&](const Status&, codec::RpcReply&&) {
    if (++thrower_calls == 1) thrown.set_value();
    throw std::runtime_error("callback failure");
  });
  ASSERT_EQ(thrown.get_future().wait_for(5s), std::future_status::ready);
  Recorder recorder(1);
  connection->Call(Payload("b"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_TRUE(recorder.Get(1).status.ok());
  EXPECT_EQ(recorder.Get(1).reply.data, "b");
  EXPECT_EQ(thrower_calls.load(), 1);
  EXPECT_FALSE(connection->closed());
}

TEST_F(ClientConnectionTest, RequestsCompleteAfterTheCallerDropsItsHandle) {
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    while (auto request = peer.ReadRequest(&serial)) {
      if (request->body != "silent") peer.Reply(serial, request->method, request->body);
    }
  });
  Recorder recorder(2);
  {
    auto connection = Connect(server.port());
    connection->Call(Payload("silent"), 200ms, recorder.Track(1));
    connection->Call(Payload("echo"), 3000ms, recorder.Track(2));
  }  // the pending requests keep the connection alive
  ASSERT_TRUE(recorder.WaitAll(5s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kRequestTimeout);
  EXPECT_TRUE(recorder.Get(2).status.ok());
  EXPECT_EQ(recorder.Get(2).reply.data, "echo");
}

TEST_F(ClientConnectionTest, EveryRequestQueuedBeforeARefusedConnectFailsOnce) {
  uint16_t port;
  {
    ScriptedServer closed(nullptr);
    port = closed.port();
  }
  auto connection = Connect(port);
  Recorder recorder(5);
  for (int i = 0; i < 5; ++i) connection->Call(Payload("x"), 5000ms, recorder.Track(i));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(recorder.Get(i).status.code(), ErrorCode::kConnectFailed);
    EXPECT_EQ(recorder.Calls(i), 1);
  }
  EXPECT_TRUE(connection->closed());
  EXPECT_EQ(connection->pending_count(), 0u);
}

TEST_F(ClientConnectionTest, ClosedBeforeConnectingNeverConnectsAndFailsCalls) {
  ScriptedServer server(Echo);
  auto connection = Connect(server.port());
  connection->Close(Status(ErrorCode::kServiceStopped, "stopped early"));
  Recorder recorder(1);
  connection->Call(Payload("a"), 3000ms, recorder.Track(1));
  ASSERT_TRUE(recorder.WaitAll(2s));
  EXPECT_EQ(recorder.Get(1).status.code(), ErrorCode::kServiceStopped);
  EXPECT_EQ(recorder.Get(1).status.message(), "stopped early");
  EXPECT_EQ(server.accepted(), 0);
}

TEST_F(ClientConnectionTest, DeadlinesRacingRepliesStillCompleteEachRequestOnce) {
  // Replies arrive in one burst while the deadlines (100..149 ms) are expiring: each
  // request ends once, with its reply or with its timeout, never both.
  constexpr int kRequests = 50;
  ScriptedServer server([](Peer& peer) {
    std::vector<std::pair<int32_t, std::string>> requests;
    int32_t serial;
    auto first = std::chrono::steady_clock::now();
    for (int i = 0; i < kRequests; ++i) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      if (i == 0) first = std::chrono::steady_clock::now();
      requests.emplace_back(serial, request->body);
    }
    std::this_thread::sleep_until(first + 120ms);
    std::string burst;
    for (const auto& request : requests) {
      burst += codec::EncodeFrame(request.first,
                                  codec::EncodeSuccessResponsePayload(2, request.second));
    }
    peer.Write(burst);
    Echo(peer);
  });
  auto connection = Connect(server.port());
  Recorder recorder(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    connection->Call(Payload(std::to_string(i)), std::chrono::milliseconds(100 + i),
                     recorder.Track(i));
  }
  ASSERT_TRUE(recorder.WaitAll(5s));
  // A last round trip: the burst has been fully handled before its reply arrives.
  Recorder sync(1);
  connection->Call(Payload("sync"), 3000ms, sync.Track(0));
  ASSERT_TRUE(sync.WaitAll(5s));
  EXPECT_EQ(recorder.Total(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(recorder.Calls(i), 1) << i;
    const Outcome outcome = recorder.Get(i);
    if (outcome.status.ok()) {
      EXPECT_EQ(outcome.reply.data, std::to_string(i));
    } else {
      EXPECT_EQ(outcome.status.code(), ErrorCode::kRequestTimeout) << outcome.status.ToString();
    }
  }
}

class ClientConnectionWriteTest : public ClientConnectionTest {
 protected:
  struct Written {
    uint64_t writes = 0;        // writes the connection started, the blocked one included
    size_t spare_capacity = 0;  // of the frame buffer it offers afterwards
  };

  // A 20 MiB request the server does not read yet keeps the first write under way while
  // `count` small requests are queued; then the server echoes everything. Each request
  // must be answered, in order.
  Written QueueBehindABlockedWrite(int count) {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    ScriptedServer server([released](Peer& peer) {
      released.wait();
      Echo(peer);
    });
    auto connection = Connect(server.port());
    Recorder big(1);
    connection->Call(Payload(std::string(20 << 20, 'x')), 10000ms, big.Track(0));
    EXPECT_TRUE(Eventually([&] { return connection->writes_started() == 1; }));
    std::this_thread::sleep_for(100ms);  // the socket buffers fill up; the write stays open
    Recorder queued(count);
    for (int i = 0; i < count; ++i) {
      connection->Call(Payload("queued-" + std::to_string(i)), 10000ms, queued.Track(i));
    }
    std::this_thread::sleep_for(100ms);  // every queued request is drained and waits
    EXPECT_EQ(connection->writes_started(), 1u);
    release.set_value();
    EXPECT_TRUE(big.WaitAll(10s));
    EXPECT_TRUE(queued.WaitAll(10s));
    EXPECT_TRUE(big.Get(0).status.ok()) << big.Get(0).status.ToString();
    for (int i = 0; i < count; ++i) {
      EXPECT_TRUE(queued.Get(i).status.ok()) << i << ": " << queued.Get(i).status.ToString();
      EXPECT_EQ(queued.Get(i).reply.data, "queued-" + std::to_string(i));
    }
    return {connection->writes_started(), connection->TakeFrameBuffer().capacity()};
  }
};

TEST_F(ClientConnectionWriteTest, FramesQueuedDuringAWriteLeaveInOneWrite) {
  EXPECT_EQ(QueueBehindABlockedWrite(20).writes, 2u);
}

TEST_F(ClientConnectionWriteTest, ADeepPipelineLeavesInBoundedWritesAndIsAllAnswered) {
  // 64 frames per write (what asio gathers into one sendmsg); every one answered
  // although replies are read in groups while hundreds are pending; the written frames'
  // buffers kept for the frames that follow.
  constexpr int kQueued = 2000;
  const Written written = QueueBehindABlockedWrite(kQueued);
  EXPECT_EQ(written.writes, 1u + (kQueued + 63) / 64);
  EXPECT_GT(written.spare_capacity, 0u);
}

// A server that reads `count` requests, then answers the first `answered`, each reply in
// a write of its own as the broker does, `gap` apart.
ScriptedServer::Script AnswerFirst(int count, int answered, std::shared_future<void> done,
                                   std::chrono::microseconds gap = {}) {
  return [=](Peer& peer) {
    struct Request {
      int32_t serial;
      int32_t method;
      std::string body;
    };
    std::vector<Request> requests;
    int32_t serial = 0;
    while (static_cast<int>(requests.size()) < count) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      requests.push_back({serial, request->method, std::string(request->body)});
    }
    for (int i = 0; i < answered; ++i) {
      peer.Reply(requests[i].serial, requests[i].method, requests[i].body);
      // Spun, not slept: a sleep lasts far longer than a few microseconds.
      const auto next = std::chrono::steady_clock::now() + gap;
      while (std::chrono::steady_clock::now() < next) {
      }
    }
    done.wait();
  };
}

TEST_F(ClientConnectionTest, RepliesOfADeepPipelineAreReadInGroups) {
  // 2 000 requests wait; 1 600 replies come, written one by one as a busy broker writes
  // them, a few microseconds apart: read on arrival, most would take a read of their own.
  constexpr int kCount = 2000;
  constexpr int kAnswered = 1600;
  std::promise<void> finish;
  ScriptedServer server(AnswerFirst(kCount, kAnswered, finish.get_future().share(), 5us));
  auto connection = Connect(server.port());
  Recorder replies(kAnswered);
  Recorder rest(kCount - kAnswered);
  for (int i = 0; i < kCount; ++i) {
    auto track = i < kAnswered ? replies.Track(i) : rest.Track(i - kAnswered);
    connection->Call(Payload("deep-" + std::to_string(i)), 10000ms, std::move(track));
  }
  EXPECT_TRUE(replies.WaitAll(10s));
  for (int i = 0; i < kAnswered; ++i) {
    EXPECT_EQ(replies.Get(i).reply.data, "deep-" + std::to_string(i)) << i;
  }
  if (read_watermark::Supported()) EXPECT_LT(connection->reads_completed(), kAnswered / 16u);
  finish.set_value();
  connection->Close(Status(ErrorCode::kServiceStopped, "test over"));
  EXPECT_TRUE(rest.WaitAll(5s));
}

TEST_F(ClientConnectionTest, AFewRepliesOfADeepPipelineAreNotKeptWaitingForOthers) {
  // 300 requests wait; 10 are answered and the server goes quiet. Their replies hold
  // fewer bytes than the read's mark, and must still arrive within the mark's wait, not
  // at the requests' 20 s timeout.
  std::promise<void> finish;
  ScriptedServer server(AnswerFirst(300, 10, finish.get_future().share()));
  auto connection = Connect(server.port());
  Recorder first(10);
  Recorder rest(290);
  for (int i = 0; i < 300; ++i) {
    auto track = i < 10 ? first.Track(i) : rest.Track(i - 10);
    connection->Call(Payload("p" + std::to_string(i)), 20000ms, std::move(track));
  }
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(first.WaitAll(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(first.Get(i).reply.data, "p" + std::to_string(i));
  EXPECT_EQ(connection->pending_count(), 290u);
  finish.set_value();
  connection->Close(Status(ErrorCode::kServiceStopped, "test over"));
  EXPECT_TRUE(rest.WaitAll(5s));
}

// Calls made while a deep pipeline waits wake nobody: they leave with the next read, the
// pipeline's 1 ms tick or the failure, whichever comes. Each scenario: 300 requests the
// server holds (`held_timeout` each), then 20 more calls (5 s each), 100 us apart; `after`
// is what the server does once it has read the 300.
class DeepPipelineCallsTest : public ClientConnectionTest {
 protected:
  static constexpr int kHeld = 300;
  static constexpr int kMore = 20;

  struct Run {
    std::shared_ptr<ClientConnection> connection;
    std::unique_ptr<ScriptedServer> server;
    Recorder held{kHeld};
    Recorder more{kMore};
    std::atomic<bool> held_read{false};  // the server has read every held request
    uint64_t writes_before_more = 0;
    int64_t more_calls_ms = 0;  // how long making the 20 took
  };

  std::unique_ptr<Run> Start(std::chrono::milliseconds held_timeout,
                             std::function<void(Peer&, std::vector<int32_t>&)> after) {
    auto run = std::make_unique<Run>();
    run->server = std::make_unique<ScriptedServer>([after, read = &run->held_read](Peer& peer) {
      std::vector<int32_t> serials;
      int32_t serial = 0;
      while (static_cast<int>(serials.size()) < kHeld && peer.ReadRequest(&serial)) {
        serials.push_back(serial);
      }
      read->store(true);
      after(peer, serials);
    });
    run->connection = Connect(run->server->port());
    for (int i = 0; i < kHeld; ++i) {
      run->connection->Call(Payload("held-" + std::to_string(i)), held_timeout,
                            run->held.Track(i));
    }
    EXPECT_TRUE(Eventually([&] { return run->held_read.load(); }));
    run->writes_before_more = run->connection->writes_started();
    const auto began = std::chrono::steady_clock::now();
    for (int i = 0; i < kMore; ++i) {
      run->connection->Call(Payload("more-" + std::to_string(i)), 5000ms, run->more.Track(i));
      // Apart (spun: a sleep lasts far longer): each call found the I/O thread asleep,
      // and woke it for a write of its own.
      const auto next = std::chrono::steady_clock::now() + 100us;
      while (std::chrono::steady_clock::now() < next) {
      }
    }
    run->more_calls_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - began)
                             .count();
    return run;
  }
};

TEST_F(DeepPipelineCallsTest, LeaveInGroupsNotAWriteEach) {
  std::promise<void> answer;
  std::shared_future<void> answering = answer.get_future().share();
  auto run = Start(5000ms, [answering](Peer& peer, std::vector<int32_t>& serials) {
    answering.wait();
    for (int32_t serial : serials) peer.Reply(serial, 2, "held");
    Echo(peer);
  });
  // The first call may still find the pipeline not known as deep, and post; the others
  // wait in the inbox for the next tick, one write per millisecond at most.
  EXPECT_LE(run->connection->writes_started() - run->writes_before_more,
            2u + static_cast<uint64_t>(run->more_calls_ms));
  answer.set_value();
  EXPECT_TRUE(run->held.WaitAll(5s));
  EXPECT_TRUE(run->more.WaitAll(5s));
  for (int i = 0; i < kMore; ++i) {
    EXPECT_TRUE(run->more.Get(i).status.ok()) << run->more.Get(i).status.ToString();
    EXPECT_EQ(run->more.Get(i).reply.data, "more-" + std::to_string(i));
  }
}

TEST_F(DeepPipelineCallsTest, LeaveWithinATickWhenThePeerHoldsItsReplies) {
  // The held requests are not answered (as a peer that answers once it has read more
  // would do); the calls behind them are, once written, and long before any timeout.
  auto run = Start(5000ms, [](Peer& peer, std::vector<int32_t>&) { Echo(peer); });
  EXPECT_TRUE(run->more.WaitAll(2s));
  for (int i = 0; i < kMore; ++i) {
    EXPECT_TRUE(run->more.Get(i).status.ok()) << run->more.Get(i).status.ToString();
  }
  EXPECT_EQ(run->connection->pending_count(), static_cast<size_t>(kHeld));
  run->connection->Close(Status(ErrorCode::kServiceStopped, "test over"));
  EXPECT_TRUE(run->held.WaitAll(5s));
}

TEST_F(DeepPipelineCallsTest, FailWithTheConnection) {
  auto run = Start(5000ms, [](Peer& peer, std::vector<int32_t>&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    peer.Reset();
  });
  EXPECT_TRUE(run->held.WaitAll(3s));
  EXPECT_TRUE(run->more.WaitAll(3s));
  for (int i = 0; i < kMore; ++i) {
    EXPECT_EQ(run->more.Get(i).status.code(), ErrorCode::kConnectionClosed)
        << run->more.Get(i).status.ToString();
  }
}

TEST(ReadWatermark, ADeepPipelineWaitsForAQuarterOfItsRepliesAtMost) {
  EXPECT_EQ(read_watermark::For(0), 1u);
  EXPECT_EQ(read_watermark::For(read_watermark::kDeepPipeline - 1), 1u);
  EXPECT_EQ(read_watermark::For(read_watermark::kDeepPipeline),
            read_watermark::kDeepPipeline / 4 * read_watermark::kMinReplyFrameBytes);
  EXPECT_EQ(read_watermark::For(1000000),
            read_watermark::kMaxRepliesWaitedFor * read_watermark::kMinReplyFrameBytes);
  for (size_t pending : {256u, 300u, 511u, 4000u, 20000u}) {
    EXPECT_LE(read_watermark::For(pending), pending / 4 * read_watermark::kMinReplyFrameBytes);
  }
}

TEST_F(ClientConnectionTest, AFailedGatheredWriteFailsEveryQueuedRequestOnce) {
  constexpr int kSmall = 10;
  ScriptedServer server([](Peer& peer) {
    std::this_thread::sleep_for(300ms);
    peer.Reset();
  });
  auto connection = Connect(server.port());
  Recorder recorder(kSmall + 1);
  connection->Call(Payload(std::string(20 << 20, 'x')), 10000ms, recorder.Track(0));
  ASSERT_TRUE(Eventually([&] { return connection->writes_started() == 1; }));
  for (int i = 1; i <= kSmall; ++i) connection->Call(Payload("q"), 10000ms, recorder.Track(i));
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i <= kSmall; ++i) {
    EXPECT_EQ(recorder.Calls(i), 1) << i;
    EXPECT_EQ(recorder.Get(i).status.code(), ErrorCode::kConnectionClosed)
        << recorder.Get(i).status.ToString();
  }
  EXPECT_TRUE(connection->closed());
}

TEST_F(ClientConnectionTest, RequestsTimeOutAtTheirOwnDeadlinesInOrderWithOneTimer) {
  // The server never answers. Deadlines given out of order must still expire in
  // deadline order, each near its own time, served by the connection's one timer.
  ScriptedServer server([](Peer& peer) {
    int32_t serial;
    while (peer.ReadRequest(&serial, 2000ms)) {
    }
  });
  auto connection = Connect(server.port());
  const std::vector<int> timeouts_ms = {400, 100, 300, 200, 100, 500};
  std::mutex mutex;
  std::vector<std::pair<int, std::chrono::milliseconds>> ended;  // id, when
  std::promise<void> all_done;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < timeouts_ms.size(); ++i) {
    connection->Call(Payload("silent"), std::chrono::milliseconds(timeouts_ms[i]),
                     [&, i](const Status& status, codec::RpcReply&&) {
                       EXPECT_EQ(status.code(), ErrorCode::kRequestTimeout);
                       std::lock_guard<std::mutex> lock(mutex);
                       ended.emplace_back(static_cast<int>(i),
                                          std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now() - start));
                       if (ended.size() == timeouts_ms.size()) all_done.set_value();
                     });
  }
  ASSERT_EQ(all_done.get_future().wait_for(5s), std::future_status::ready);
  std::lock_guard<std::mutex> lock(mutex);
  int previous_timeout = 0;
  for (const auto& [id, when] : ended) {
    EXPECT_GE(timeouts_ms[id], previous_timeout) << "request " << id << " ended out of order";
    previous_timeout = timeouts_ms[id];
    EXPECT_GE(when.count(), timeouts_ms[id]) << "request " << id << " ended early";
    EXPECT_LT(when.count(), timeouts_ms[id] + 150) << "request " << id << " ended late";
  }
  // Armed for 400, re-armed for 100 (earlier), then once per distinct deadline left: far
  // fewer than a timer per request would need, and never more than one at a time.
  EXPECT_LE(connection->deadline_timer_arms(), 2u + 5u);
  EXPECT_FALSE(connection->closed());
}

TEST_F(ClientConnectionTest, SameTimeoutRequestsShareOneArmedTimer) {
  constexpr int kRequests = 200;
  // Replies only once every request is in, so none completes while others are queued.
  ScriptedServer server([](Peer& peer) {
    std::vector<std::pair<int32_t, std::string>> received;
    int32_t serial;
    for (int i = 0; i < kRequests; ++i) {
      auto request = peer.ReadRequest(&serial);
      if (!request) return;
      received.emplace_back(serial, request->body);
    }
    for (const auto& [serial_number, body] : received) peer.Reply(serial_number, 2, body);
    Echo(peer);
  });
  auto connection = Connect(server.port());
  Recorder recorder(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    connection->Call(Payload(std::to_string(i)), 5000ms, recorder.Track(i));
  }
  ASSERT_TRUE(recorder.WaitAll(5s));
  for (int i = 0; i < kRequests; ++i) EXPECT_TRUE(recorder.Get(i).status.ok());
  // Every later request's deadline is covered by the timer armed for the first one.
  EXPECT_EQ(connection->deadline_timer_arms(), 1u);
}

}  // namespace
}  // namespace tubemq::net
