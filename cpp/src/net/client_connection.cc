#include "net/client_connection.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "log/log.h"
#include "net/read_watermark.h"

namespace tubemq::net {
namespace {

constexpr size_t kReadChunkSize = 64 * 1024;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             ClientConnection::Clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::shared_ptr<ClientConnection> ClientConnection::Create(asio::io_context& io,
                                                           meta::Endpoint endpoint,
                                                           ConnectionOptions options,
                                                           std::shared_ptr<TlsContext> tls) {
  return std::make_shared<ClientConnection>(PrivateTag{}, io, std::move(endpoint), options,
                                            std::move(tls));
}

ClientConnection::ClientConnection(PrivateTag, asio::io_context& io, meta::Endpoint endpoint,
                                   ConnectionOptions options, std::shared_ptr<TlsContext> tls)
    : strand_(asio::make_strand(io)),
      resolver_(strand_),
      socket_(strand_),
      connect_timer_(strand_),
      deadline_timer_(strand_),
      deep_tick_timer_(strand_),
      endpoint_(std::move(endpoint)),
      options_(options),
      tls_(std::move(tls)),
      reader_(options.frame_limits),
      read_buffer_(kReadChunkSize),
      last_activity_ns_(NowNanos()) {}

ClientConnection::~ClientConnection() = default;

ClientConnection::Clock::time_point ClientConnection::last_activity() const {
  return Clock::time_point(std::chrono::nanoseconds(last_activity_ns_.load()));
}

void ClientConnection::Touch() { last_activity_ns_.store(NowNanos()); }

void ClientConnection::Call(std::string payload, std::chrono::milliseconds timeout,
                            Callback callback) {
  // Framing happens on the caller's thread; only the serial number is patched in on
  // the strand, once it is known to be unique among the pending requests.
  CallFrame(codec::EncodeFrame(0, payload), timeout, std::move(callback));
}

void ClientConnection::CallFrame(std::string frame, std::chrono::milliseconds timeout,
                                 Callback callback) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_.push_back(Outgoing{std::move(frame), timeout, std::move(callback)});
    // One drain per burst: the calls that arrive before it runs ride along, and the
    // I/O thread is woken once for all of them. Behind a deep pipeline, not even once:
    // the connection's next read or tick drains the inbox (see DrainInbox).
    if (!std::exchange(drain_posted_, true)) post = !drained_by_reads_;
  }
  if (post) asio::post(strand_, [self = shared_from_this()] { self->DrainInbox(); });
}

std::string ClientConnection::TakeFrameBuffer() {
  std::string buffer;
  std::lock_guard<std::mutex> lock(spare_mutex_);
  if (!spare_frames_.empty()) {
    buffer.swap(spare_frames_.back());
    spare_frames_.pop_back();
    spare_bytes_ -= buffer.capacity();
  }
  return buffer;
}

// The written frames' buffers become spares, as many as fit the bound: more than one
// write's worth (kMaxFramesPerWrite) of common frames, little memory when idle.
void ClientConnection::KeepSpareFrames() {
  constexpr size_t kMaxSpareBytes = size_t{1} << 20;
  constexpr size_t kMaxSpareFrameBytes = codec::kWriteBlockSize * 2;
  std::lock_guard<std::mutex> lock(spare_mutex_);
  for (std::string& frame : writing_) {
    const size_t capacity = frame.capacity();
    if (capacity > kMaxSpareFrameBytes || spare_bytes_ + capacity > kMaxSpareBytes) continue;
    frame.clear();
    spare_bytes_ += capacity;
    spare_frames_.push_back(std::move(frame));
  }
}

// Posted by a call that found the inbox without a drain on its way, and run after every
// read, deep-pipeline tick and failure. While a deep pipeline waits (read_watermark.h), calls
// post nothing: waking the I/O thread for each send was a tenth of a sender's time, and
// the frames would only queue behind hundreds of others. They leave with the next read,
// or with the deep pipeline's tick (ArmDeepPipelineTick), within a millisecond either way.
void ClientConnection::DrainInbox() {
  bool again = true;
  bool deep = false;
  while (again) {
    {
      std::lock_guard<std::mutex> lock(inbox_mutex_);
      draining_.swap(inbox_);  // inbox_ takes draining_'s (empty) capacity
      drain_posted_ = false;
    }
    const auto now = Clock::now();
    for (Outgoing& outgoing : draining_) {
      if (state_ == State::kClosed) {
        outgoing.callback(close_reason_, codec::RpcReply{});
        continue;
      }
      const int32_t serial = NextSerial();
      codec::PatchFrameSerial(outgoing.frame, serial);
      const auto deadline = now + outgoing.timeout;
      pending_.emplace(serial,
                       Pending{std::move(outgoing.callback), deadline, outgoing.timeout});
      if (deadlines_.Add(serial, deadline)) ArmDeadlineTimer(deadline);
      write_queue_.push_back(std::move(outgoing.frame));
    }
    draining_.clear();
    pending_count_.store(pending_.size(), std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    drained_by_reads_ =
        state_ == State::kOpen && pending_.size() >= read_watermark::kDeepPipeline;
    deep = drained_by_reads_;
    // Calls that came meanwhile, while reads were to drain them, posted nothing: if
    // reads no longer will, they are drained now.
    again = !drained_by_reads_ && !inbox_.empty() && drain_posted_;
  }
  if (deep) ArmDeepPipelineTick();
  if (write_queue_.empty()) return;
  if (state_ == State::kIdle) {
    StartConnect();
  } else if (state_ == State::kOpen) {
    WriteNext();
  }
}

void ClientConnection::ArmDeadlineTimer(Clock::time_point when) {
  deadlines_.Armed(when);
  deadline_timer_arms_.fetch_add(1, std::memory_order_relaxed);
  // expires_at() aborts the previous wait; a wait that had already fired and is queued
  // is told apart by its generation.
  deadline_timer_.expires_at(when);
  const uint64_t generation = ++deadline_generation_;
  deadline_timer_.async_wait([weak = weak_from_this(), generation](const asio::error_code& error) {
    auto self = weak.lock();
    if (!self || error || generation != self->deadline_generation_) return;
    self->OnDeadlineTimer(error);
  });
}

void ClientConnection::OnDeadlineTimer(const asio::error_code&) {
  deadlines_.Disarmed();
  if (state_ == State::kClosed) return;
  std::vector<int32_t> expired;
  expired.swap(expired_);
  deadlines_.PopExpired(Clock::now(), expired);
  for (int32_t serial : expired) {
    auto it = pending_.find(serial);
    if (it == pending_.end()) continue;
    Complete(serial, TimeoutStatus(it->second.timeout), codec::RpcReply{});
    if (state_ == State::kClosed) break;
  }
  expired.clear();
  expired_.swap(expired);
  // The earliest deadline left (requests answered meanwhile were removed); nothing
  // due means no timer at all.
  if (state_ != State::kClosed) {
    if (const auto earliest = deadlines_.Earliest()) ArmDeadlineTimer(*earliest);
  }
}

Status ClientConnection::TimeoutStatus(std::chrono::milliseconds timeout) const {
  // A server that does not speak TLS neither answers a TLS hello nor closes: say so
  // rather than blame the request.
  const bool handshaking = state_ == State::kConnecting && tls_stream_ != nullptr;
  const std::string where = endpoint_.ToString();
  const std::string within = " within " + std::to_string(timeout.count()) + " ms";
  return Status(ErrorCode::kRequestTimeout,
                handshaking
                    ? "TLS handshake with " + where + " not done" + within + " (is that a TLS port?)"
                    : "no reply from " + where + within);
}

void ClientConnection::Connect(std::function<void(const Status&)> done) {
  asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
    switch (self->state_) {
      case State::kOpen:
        done(Status::OK());
        return;
      case State::kClosed:
        done(self->close_reason_);
        return;
      case State::kIdle:
        self->connect_waiters_.push_back(std::move(done));
        self->StartConnect();
        return;
      case State::kConnecting:
        self->connect_waiters_.push_back(std::move(done));
        return;
    }
  });
}

int32_t ClientConnection::NextSerial() {
  // Serial numbers only need to be unique among pending requests; the counter wraps
  // around freely and skips any value still waiting for its reply.
  int32_t serial;
  do {
    serial = static_cast<int32_t>(next_serial_++);
  } while (pending_.count(serial) != 0);
  return serial;
}

void ClientConnection::StartConnect() {
  state_ = State::kConnecting;
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this()](const asio::error_code& error) {
    if (error || self->state_ != State::kConnecting) return;
    const bool handshaking = self->tls_stream_ != nullptr;
    self->Fail(Status(ErrorCode::kConnectFailed,
                      std::string(handshaking ? "TLS handshake with " : "connect to ") +
                          self->endpoint_.ToString() + " timed out after " +
                          std::to_string(self->options_.connect_timeout.count()) + " ms" +
                          (handshaking ? " (is that a TLS port?)" : "")));
  });
  resolver_.async_resolve(
      endpoint_.host, std::to_string(endpoint_.port),
      [self = shared_from_this()](const asio::error_code& error,
                                  asio::ip::tcp::resolver::results_type results) {
        self->OnResolved(error, std::move(results));
      });
}

void ClientConnection::OnResolved(const asio::error_code& error,
                                  asio::ip::tcp::resolver::results_type results) {
  if (state_ != State::kConnecting) return;
  if (error) {
    Fail(Status(ErrorCode::kConnectFailed,
                "cannot resolve " + endpoint_.host + ": " + error.message()));
    return;
  }
  asio::async_connect(socket_, results,
                      [self = shared_from_this()](const asio::error_code& connect_error,
                                                  const asio::ip::tcp::endpoint&) {
                        self->OnConnected(connect_error);
                      });
}

void ClientConnection::OnConnected(const asio::error_code& error) {
  if (state_ != State::kConnecting) return;
  if (error) {
    connect_timer_.cancel();
    Fail(Status(ErrorCode::kConnectFailed,
                "cannot connect to " + endpoint_.ToString() + ": " + error.message()));
    return;
  }
  asio::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  if (tls_) {
    StartHandshake();
  } else {
    Opened();
  }
}

void ClientConnection::StartHandshake() {
  tls_stream_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, tls_->ssl());
  if (tls_->verify_hostname()) {
    tls_stream_->set_verify_callback(asio::ssl::host_name_verification(endpoint_.host));
  }
  asio::error_code address_error;
  asio::ip::make_address(endpoint_.host, address_error);
  if (address_error) {  // a name, not an address: tell the server which one (SNI)
    SSL_set_tlsext_host_name(tls_stream_->native_handle(), endpoint_.host.c_str());
  }
  tls_stream_->async_handshake(
      asio::ssl::stream_base::client, [self = shared_from_this()](const asio::error_code& error) {
        if (self->state_ != State::kConnecting) return;
        if (error) {
          self->connect_timer_.cancel();
          std::string why = error.message();
          const long verdict = SSL_get_verify_result(self->tls_stream_->native_handle());
          if (verdict != X509_V_OK) {
            why += " (" + std::string(X509_verify_cert_error_string(verdict)) + ")";
          }
          self->Fail(Status(ErrorCode::kConnectFailed, "TLS handshake with " +
                                                           self->endpoint_.ToString() +
                                                           " failed: " + why));
          return;
        }
        self->Opened();
      });
}

void ClientConnection::Opened() {
  connect_timer_.cancel();
  state_ = State::kOpen;
  Touch();
  TUBEMQ_LOG_DEBUG("connected to " << endpoint_.ToString() << (tls_ ? " over TLS" : ""));
  ReadNext();
  WriteNext();
  for (auto& waiter : std::exchange(connect_waiters_, {})) waiter(Status::OK());
}

void ClientConnection::WriteNext() {
  if (write_in_progress_ || write_queue_.empty() || state_ != State::kOpen) return;
  write_in_progress_ = true;
  writes_started_.fetch_add(1, std::memory_order_relaxed);
  // The frames queued leave in this one write, up to kMaxFramesPerWrite; the rest and
  // frames queued meanwhile wait for the next. asio gathers at most 64 buffers into one
  // sendmsg, so a longer write would only be more calls before its completion, while a
  // bounded one hands its buffers back (TakeFrameBuffer) in time for the frames that
  // follow: a write of a whole 20 000-send window returned them too late to be reused.
  // writing_ (and tls_out_) keep the bytes alive until the write completes, even if
  // Fail() runs in between.
  const size_t count = std::min(write_queue_.size(), kMaxFramesPerWrite);
  for (size_t i = 0; i < count; ++i) {
    writing_.push_back(std::move(write_queue_.front()));
    write_queue_.pop_front();
  }
  auto on_written = [self = shared_from_this()](const asio::error_code& error, size_t) {
    self->OnWritten(error);
  };
  if (tls_stream_) {
    // The SSL stream writes one buffer per call (one record, one send each), so a buffer
    // sequence would not gather anything: coalesce instead.
    tls_out_.clear();
    size_t total = 0;
    for (const std::string& frame : writing_) total += frame.size();
    tls_out_.reserve(total);
    for (const std::string& frame : writing_) tls_out_.append(frame);
    asio::async_write(*tls_stream_, asio::buffer(tls_out_), std::move(on_written));
  } else {
    // A buffer sequence: asio writes up to 64 buffers per sendmsg, with no copy.
    write_buffers_.clear();
    for (const std::string& frame : writing_) write_buffers_.push_back(asio::buffer(frame));
    asio::async_write(socket_, write_buffers_, std::move(on_written));
  }
}

void ClientConnection::OnWritten(const asio::error_code& error) {
  write_in_progress_ = false;
  KeepSpareFrames();
  writing_.clear();
  if (state_ != State::kOpen) return;
  if (error) {
    // Every frame of this write, and every one queued after it, is failed with the
    // pending requests by Fail().
    Fail(Status(ErrorCode::kConnectionClosed,
                "write to " + endpoint_.ToString() + " failed: " + error.message()));
    return;
  }
  Touch();
  WriteNext();
}

void ClientConnection::ReadNext() {
  if (read_watermark_ > 1 && !tls_stream_) {
    // A read started now would take the few replies that came in meanwhile (asio reads
    // at once after a read that returned bytes), one short read after another: wait
    // for the mark, or for its lowering, first. Not over TLS, whose stream may hold
    // bytes already taken from the socket.
    socket_.async_wait(asio::socket_base::wait_read,
                       [self = shared_from_this()](const asio::error_code& error) {
                         if (self->state_ != State::kOpen) return;
                         if (error) {
                           self->OnRead(error, 0);
                         } else {
                           self->ReadNow();
                         }
                       });
    return;
  }
  ReadNow();
}

void ClientConnection::ReadNow() {
  auto on_read = [self = shared_from_this()](const asio::error_code& error, size_t bytes) {
    self->OnRead(error, bytes);
  };
  OnStream([&](auto& stream) { stream.async_read_some(asio::buffer(read_buffer_), on_read); });
}

void ClientConnection::OnRead(const asio::error_code& error, size_t bytes) {
  if (state_ != State::kOpen) return;
  if (error) {
    const bool mid_frame = reader_.InsideFrame();
    const bool closed = error == asio::error::eof || error == asio::ssl::error::stream_truncated;
    std::string what = closed ? "closed by the peer" : error.message();
    if (mid_frame) what += " in the middle of a frame";
    Fail(Status(ErrorCode::kConnectionClosed,
                "connection to " + endpoint_.ToString() + " " + what));
    return;
  }
  Touch();
  reads_completed_.fetch_add(1, std::memory_order_relaxed);
  frames_.clear();
  Status status = reader_.Feed(read_buffer_.data(), bytes, frames_);
  // Frames completed before a framing error are still answered.
  for (codec::Frame& frame : frames_) {
    Dispatch(frame);
    if (state_ != State::kOpen) return;
  }
  if (!status.ok()) {
    Fail(Status(ErrorCode::kProtocolError,
                "protocol error from " + endpoint_.ToString() + ": " + status.message()));
    return;
  }
  DrainInbox();
  if (state_ != State::kOpen) return;
  // A deep pipeline's replies wake the next read in groups (read_watermark.h).
  const size_t mark = read_watermark::Supported() ? read_watermark::For(pending_.size()) : 1;
  SetReadWatermark(mark);  // a mark above one byte: DrainInbox armed the tick that lowers it
  ReadNext();
}

// While a deep pipeline waits, every kMaxWait the read mark is lowered to one byte (no
// reply waits longer for others to join it) and the inbox is drained (no call waits
// longer for a read: a peer may hold its replies until it has read more requests). Armed
// by whichever finds the pipeline deep first; DrainInbox re-arms it while it stays deep.
void ClientConnection::ArmDeepPipelineTick() {
  if (deep_tick_armed_) return;
  deep_tick_armed_ = true;
  deep_tick_timer_.expires_after(read_watermark::kMaxWait);
  deep_tick_timer_.async_wait([self = shared_from_this()](const asio::error_code& error) {
    self->deep_tick_armed_ = false;
    if (error || self->state_ != State::kOpen) return;
    self->SetReadWatermark(1);
    self->DrainInbox();
  });
}

void ClientConnection::SetReadWatermark(size_t bytes) {
  if (bytes == read_watermark_) return;
  asio::error_code error;
  socket_.set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)), error);
  // Refused, the socket keeps its mark and reads wake as they did: nothing is lost.
  if (!error) read_watermark_ = bytes;
}

void ClientConnection::Dispatch(codec::Frame& frame) {
  codec::RpcReply reply;
  Status status = codec::DecodeResponsePayload(frame.payload, reply);
  if (!status.ok()) {
    // An unparsable reply means the peer does not speak our protocol (or the stream
    // is corrupt): nothing later on this connection can be trusted.
    Fail(Status(ErrorCode::kProtocolError,
                "protocol error from " + endpoint_.ToString() + ": " + status.message()));
    return;
  }
  // A reply nobody waits for (timed out, or duplicated by a stopping server) is
  // dropped without fuss (protocol.md §1.5).
  Complete(frame.serial, Status::OK(), std::move(reply));
}

void ClientConnection::Complete(int32_t serial, const Status& status, codec::RpcReply&& reply) {
  auto it = pending_.find(serial);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  pending_count_.store(pending_.size(), std::memory_order_relaxed);
  // While other requests wait, the timer is not touched: if this was the earliest
  // deadline, the timer fires early, finds nothing due and re-arms for the next one.
  // The last one out cancels it: an armed timer is outstanding work, and would hold up
  // the I/O service's shutdown for as long as the timeout.
  deadlines_.Remove(serial, pending.deadline);
  if (deadlines_.empty() && deadlines_.armed()) {
    deadlines_.Disarmed();
    ++deadline_generation_;
    deadline_timer_.cancel();
  }
  try {
    pending.callback(status, std::move(reply));
  } catch (const std::exception& e) {
    TUBEMQ_LOG_ERROR("request callback threw: " << e.what());
  } catch (...) {
    TUBEMQ_LOG_ERROR("request callback threw a non-standard exception");
  }
}

void ClientConnection::Close(Status reason) {
  asio::post(strand_, [self = shared_from_this(), reason = std::move(reason)]() mutable {
    self->Fail(std::move(reason), /*on_request=*/true);
  });
}

void ClientConnection::Fail(Status reason, bool on_request) {
  if (state_ == State::kClosed) return;
  // Set before closed_, so that whoever sees the connection closed also sees why.
  lost_.store(!on_request, std::memory_order_release);
  if (state_ != State::kIdle) {
    TUBEMQ_LOG_INFO("closing connection to " << endpoint_.ToString() << ": " << reason.message());
  }
  state_ = State::kClosed;
  close_reason_ = reason;
  closed_.store(true, std::memory_order_release);
  asio::error_code ignored;
  connect_timer_.cancel();
  deadline_timer_.cancel();
  deep_tick_timer_.cancel();
  deadlines_.Disarmed();
  deadlines_.Clear();
  resolver_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  write_queue_.clear();
  // Complete every pending request exactly once, in serial order for determinism.
  std::vector<int32_t> serials;
  serials.reserve(pending_.size());
  for (const auto& entry : pending_) serials.push_back(entry.first);
  std::sort(serials.begin(), serials.end());
  for (int32_t serial : serials) Complete(serial, reason, codec::RpcReply{});
  DrainInbox();  // calls behind a deep pipeline posted no drain of their own
  for (auto& waiter : std::exchange(connect_waiters_, {})) waiter(reason);
}

}  // namespace tubemq::net
