// ClientConnection: one TCP (or TLS over TCP) connection to a master or broker, shared by
// every request to that node. Requests are pipelined and matched to replies by serial number; each
// has its own deadline. Every request completes exactly once: with its reply, with a
// timeout, or with the transport error that closed the connection.
//
// Threads: all state is touched only on the connection's strand (one I/O thread runs it
// at a time), except the inbox. Call() may come from any thread: it frames the request
// on the caller's thread, appends it to the inbox under a small mutex, and posts one
// drain to the strand only when the inbox was empty - so a burst of calls costs one
// post (and one wake of the I/O thread), not one each. The drain, on the strand,
// assigns serial numbers, records deadlines and queues the frames for writing.
//
// Writes are gathered: every frame queued while a write is under way (or drained in
// the same batch) leaves in the next single write - a buffer sequence over plain TCP
// (one sendmsg for up to 64 frames), one coalesced buffer over TLS (the SSL stream
// writes one buffer per record). A failed write fails every pending request.
//
// Deadlines: one timer per connection, armed for the earliest deadline of a
// RequestDeadlines (net/request_deadlines.h); no timer object per request.
// Callbacks run on an I/O thread and must not block.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codec/frame_codec.h"
#include "codec/rpc_envelope.h"
#include "meta/endpoint.h"
#include "net/request_deadlines.h"
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
  static std::shared_ptr<ClientConnection> Create(asio::io_context& io, meta::Endpoint endpoint,
                                                  ConnectionOptions options,
                                                  std::shared_ptr<TlsContext> tls = nullptr);
  ClientConnection(PrivateTag, asio::io_context& io, meta::Endpoint endpoint,
                   ConnectionOptions options, std::shared_ptr<TlsContext> tls);
  ~ClientConnection();

  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Sends a request; connects first if needed. `payload` is a request payload
  // (codec::EncodeRequestPayload). Safe to call from any thread.
  void Call(std::string payload, std::chrono::milliseconds timeout, Callback callback);
  // The same with the request already framed (codec::EncodeRequestFrame), serial 0.
  void CallFrame(std::string frame, std::chrono::milliseconds timeout, Callback callback);

  // An empty string with the capacity of a frame this connection has written, if one is
  // spare (else a new empty string), for the next frame to be encoded into. Frames are
  // made on the callers' threads and written (then dropped) on the I/O thread: freeing
  // them there and allocating anew here cost a send about a tenth of its CPU in the
  // allocator, which hands memory between threads slowly.
  std::string TakeFrameBuffer();

  // Opens the connection if it is not open yet, without sending anything; `done` learns
  // whether it opened (OK) or why not. Called on the connection's strand: `done` must not
  // block. A probe of whether an address takes connections again.
  void Connect(std::function<void(const Status&)> done);

  // Closes the connection and fails every pending request with `reason`.
  void Close(Status reason);

  const meta::Endpoint& endpoint() const { return endpoint_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Closed by a failure (connect, transport, protocol) rather than by Close().
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // How many requests wait for a reply; read without the strand, so approximate.
  size_t pending_count() const { return pending_count_.load(std::memory_order_relaxed); }
  Clock::time_point last_activity() const;
  // Writes started on the stream (each one gathered write); for tests and benchmarks.
  uint64_t writes_started() const { return writes_started_.load(std::memory_order_relaxed); }
  // Reads that returned bytes; for tests.
  uint64_t reads_completed() const { return reads_completed_.load(std::memory_order_relaxed); }
  // Times the deadline timer was armed; for tests.
  uint64_t deadline_timer_arms() const {
    return deadline_timer_arms_.load(std::memory_order_relaxed);
  }

 private:
  struct Pending {
    Callback callback;
    Clock::time_point deadline;
    std::chrono::milliseconds timeout;  // for the timeout message
  };
  // A request handed to Call(), waiting in the inbox for the strand.
  struct Outgoing {
    std::string frame;
    std::chrono::milliseconds timeout;
    Callback callback;
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
  void DrainInbox();
  void WriteNext();
  void OnWritten(const asio::error_code& error);
  void KeepSpareFrames();
  void ArmDeadlineTimer(Clock::time_point when);
  void OnDeadlineTimer(const asio::error_code& error);
  Status TimeoutStatus(std::chrono::milliseconds timeout) const;
  void ReadNext();
  void ReadNow();
  void OnRead(const asio::error_code& error, size_t bytes);
  void SetReadWatermark(size_t bytes);
  void ArmDeepPipelineTick();
  void Dispatch(codec::Frame& frame);
  void Complete(int32_t serial, const Status& status, codec::RpcReply&& reply);
  void Fail(Status reason, bool on_request = false);
  int32_t NextSerial();
  void Touch();

  asio::strand<asio::io_context::executor_type> strand_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer deadline_timer_;  // the one timer for every request's deadline
  asio::steady_timer deep_tick_timer_;  // see ArmDeepPipelineTick
  bool deep_tick_armed_ = false;       // strand only
  const meta::Endpoint endpoint_;
  const ConnectionOptions options_;
  const std::shared_ptr<TlsContext> tls_;
  // Over socket_, made once TCP is up; kept until destruction, because handlers of
  // operations on it may still be queued when the connection fails.
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_stream_;

  State state_ = State::kIdle;
  std::atomic<bool> closed_{false};
  std::atomic<bool> lost_{false};
  Status close_reason_;
  std::mutex inbox_mutex_;
  std::vector<Outgoing> inbox_;   // guarded by inbox_mutex_
  bool drain_posted_ = false;     // guarded by inbox_mutex_
  bool drained_by_reads_ = false;  // guarded by inbox_mutex_; reads or the tick drain it
  std::vector<Outgoing> draining_;  // strand only; keeps the inbox's capacity
  static constexpr size_t kMaxFramesPerWrite = 64;
  std::deque<std::string> write_queue_;  // frames waiting for the next write
  std::vector<std::string> writing_;      // frames of the write under way
  std::mutex spare_mutex_;
  std::vector<std::string> spare_frames_;  // guarded by spare_mutex_; see TakeFrameBuffer
  size_t spare_bytes_ = 0;                 // their capacity, guarded by spare_mutex_
  std::vector<asio::const_buffer> write_buffers_;
  std::string tls_out_;  // the write under way, coalesced (TLS only)
  RequestDeadlines deadlines_;
  uint64_t deadline_generation_ = 0;  // tells a stale timer completion from the current
  std::vector<int32_t> expired_;
  std::vector<std::function<void(const Status&)>> connect_waiters_;
  bool write_in_progress_ = false;
  std::unordered_map<int32_t, Pending> pending_;
  std::atomic<size_t> pending_count_{0};
  uint32_t next_serial_ = 1;
  codec::FrameReader reader_;
  std::vector<uint8_t> read_buffer_;
  size_t read_watermark_ = 1;  // the socket's receive low-water mark, in bytes
  std::vector<codec::Frame> frames_;
  std::atomic<int64_t> last_activity_ns_;
  std::atomic<uint64_t> writes_started_{0};
  std::atomic<uint64_t> reads_completed_{0};
  std::atomic<uint64_t> deadline_timer_arms_{0};
};

}  // namespace tubemq::net
