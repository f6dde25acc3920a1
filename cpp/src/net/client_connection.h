// ClientConnection: one TCP (or TLS over TCP) connection to a master or broker, shared by
// every request to that node. Requests are pipelined and matched to replies by serial number; each
// has its own deadline. Every request completes exactly once: with its reply, with a
// timeout, or with the transport error that closed the connection.
//
// All state is touched only on the connection's strand, so the I/O threads never
// contend on a lock here. Callbacks run on an I/O thread and must not block.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codec/frame_codec.h"
#include "codec/rpc_envelope.h"
#include "net/endpoint.h"
#include "net/tls_context.h"
#include "tubemq/status.h"

namespace tubemq::net {

struct ConnectionOptions {
  std::chrono::milliseconds connect_timeout{3000};
  codec::FrameLimits frame_limits{};
};

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  using Callback = std::function<void(const Status&, codec::RpcReply&&)>;
  using Clock = std::chrono::steady_clock;

  // Every connection is owned by a shared_ptr: its handlers keep it alive with
  // shared_from_this(). The tag keeps the constructor usable by make_shared only.
  struct PrivateTag {};
  // With `tls`, the connection is TLS from its first byte (the TLS handshake counts
  // towards the connect timeout); the framing inside is the same.
  static std::shared_ptr<ClientConnection> Create(asio::io_context& io, Endpoint endpoint,
                                                  ConnectionOptions options,
                                                  std::shared_ptr<TlsContext> tls = nullptr);
  ClientConnection(PrivateTag, asio::io_context& io, Endpoint endpoint, ConnectionOptions options,
                   std::shared_ptr<TlsContext> tls);
  ~ClientConnection();

  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Sends a request; connects first if needed. `payload` is a request payload
  // (codec::EncodeRequestPayload). Safe to call from any thread.
  void Call(std::string payload, std::chrono::milliseconds timeout, Callback callback);

  // Opens the connection if it is not open yet, without sending anything; `done` learns
  // whether it opened (OK) or why not. Called on the connection's strand: `done` must not
  // block. A probe of whether an address takes connections again.
  void Connect(std::function<void(const Status&)> done);

  // Closes the connection and fails every pending request with `reason`.
  void Close(Status reason);

  const Endpoint& endpoint() const { return endpoint_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Closed by a failure (connect, transport, protocol) rather than by Close().
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // How many requests wait for a reply; read without the strand, so approximate.
  size_t pending_count() const { return pending_count_.load(std::memory_order_relaxed); }
  Clock::time_point last_activity() const;

 private:
  struct Pending {
    Callback callback;
    std::unique_ptr<asio::steady_timer> deadline;
  };
  enum class State { kIdle, kConnecting, kOpen, kClosed };

  void StartConnect();
  void OnResolved(const asio::error_code& error, asio::ip::tcp::resolver::results_type results);
  void OnConnected(const asio::error_code& error);
  void StartHandshake();
  void Opened();
  // Runs `operation` on the byte stream: the TLS stream when there is one, else the socket.
  template <typename Operation>
  void OnStream(Operation&& operation) {
    if (tls_stream_) {
      operation(*tls_stream_);
    } else {
      operation(socket_);
    }
  }
  void Enqueue(std::string frame);
  void WriteNext();
  void ReadNext();
  void OnRead(const asio::error_code& error, size_t bytes);
  void Dispatch(codec::Frame& frame);
  void Complete(int32_t serial, const Status& status, codec::RpcReply&& reply);
  void Fail(Status reason, bool on_request = false);
  int32_t NextSerial();
  void Touch();

  asio::strand<asio::io_context::executor_type> strand_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer connect_timer_;
  const Endpoint endpoint_;
  const ConnectionOptions options_;
  const std::shared_ptr<TlsContext> tls_;
  // Over socket_, made once TCP is up; kept until destruction, because handlers of
  // operations on it may still be queued when the connection fails.
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_stream_;

  State state_ = State::kIdle;
  std::atomic<bool> closed_{false};
  std::atomic<bool> lost_{false};
  Status close_reason_;
  std::deque<std::string> write_queue_;
  std::vector<std::function<void(const Status&)>> connect_waiters_;
  bool writing_ = false;
  std::unordered_map<int32_t, Pending> pending_;
  std::atomic<size_t> pending_count_{0};
  uint32_t next_serial_ = 1;
  codec::FrameReader reader_;
  std::vector<uint8_t> read_buffer_;
  std::vector<codec::Frame> frames_;
  std::atomic<int64_t> last_activity_ns_;
};

}  // namespace tubemq::net
