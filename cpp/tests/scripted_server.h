// A TCP server on 127.0.0.1 that plays a script per connection: it can answer properly,
// answer late, answer out of order, send garbage, cut a frame short or reset the
// connection. Plain blocking sockets on their own threads, independent of asio, so the
// client under test shares nothing with it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codec/frame_codec.h"
#include "codec/rpc_envelope.h"

namespace tubemq::testing {

// One accepted connection, as the script sees it.
class Peer {
 public:
  Peer(int fd, const std::atomic<bool>& stopping) : fd_(fd), stopping_(stopping) {}
  ~Peer() {
    if (fd_ >= 0) ::close(fd_);
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  // The next request, or nothing if the client closed or `wait` passed.
  std::optional<codec::RpcRequestView> ReadRequest(int32_t* serial,
                                                   std::chrono::milliseconds wait =
                                                       std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (frames_.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || stopping_) return std::nullopt;
      // Short slices, so that a stopping server never waits out a long read.
      pollfd poll_fd{fd_, POLLIN, 0};
      if (::poll(&poll_fd, 1, std::min(50, static_cast<int>(left.count()))) <= 0) continue;
      uint8_t buffer[4096];
      const ssize_t got = ::read(fd_, buffer, sizeof buffer);
      if (got <= 0) return std::nullopt;
      if (!reader_.Feed(buffer, static_cast<size_t>(got), frames_).ok()) return std::nullopt;
    }
    codec::Frame frame = std::move(frames_.front());
    frames_.erase(frames_.begin());
    codec::RpcRequestView request;
    if (!codec::DecodeRequestPayload(frame.payload, request).ok()) return std::nullopt;
    *serial = frame.serial;
    return request;
  }

  // Exactly `size` raw bytes as the client sent them (for byte-level checks), or
  // fewer if the client closed or `wait` passed. Use before any ReadRequest().
  std::string ReadRaw(size_t size,
                      std::chrono::milliseconds wait = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::string bytes;
    while (bytes.size() < size) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || stopping_) break;
      pollfd poll_fd{fd_, POLLIN, 0};
      if (::poll(&poll_fd, 1, std::min(50, static_cast<int>(left.count()))) <= 0) continue;
      char buffer[4096];
      const ssize_t got = ::read(fd_, buffer, std::min(sizeof buffer, size - bytes.size()));
      if (got <= 0) break;
      bytes.append(buffer, static_cast<size_t>(got));
    }
    return bytes;
  }

  void Write(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t put = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (put <= 0) return;
      done += static_cast<size_t>(put);
    }
  }

  // Writes `bytes` in separate sends of `piece` bytes with TCP_NODELAY, pausing a
  // little between them, so the client sees the data arrive in many small reads.
  void WriteInPieces(const std::string& bytes, size_t piece) {
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    for (size_t at = 0; at < bytes.size(); at += piece) {
      Write(bytes.substr(at, piece));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // A success reply whose data is `data`, to request `serial`.
  void Reply(int32_t serial, int32_t method, const std::string& data) {
    Write(codec::EncodeFrame(serial, codec::EncodeSuccessResponsePayload(method, data)));
  }

  // Closes with RST instead of FIN.
  void Reset() {
    linger option{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &option, sizeof option);
    ::close(fd_);
    fd_ = -1;
  }

  // Sends FIN but keeps reading, so unread requests do not turn the close into a reset.
  void HalfClose() { ::shutdown(fd_, SHUT_WR); }

  void Close() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  const std::atomic<bool>& stopping_;
  codec::FrameReader reader_;
  std::vector<codec::Frame> frames_;
};

// Replies to every request with its own body, immediately.
inline void Echo(Peer& peer) {
  int32_t serial;
  while (auto request = peer.ReadRequest(&serial)) {
    peer.Reply(serial, request->method, request->body);
  }
}

class ScriptedServer {
 public:
  using Script = std::function<void(Peer&)>;

  explicit ScriptedServer(Script script, int backlog = 16) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    ::listen(listen_fd_, backlog);
    if (script_) acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& thread : sessions_) thread.join();
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      pollfd poll_fd{listen_fd_, POLLIN, 0};
      if (::poll(&poll_fd, 1, 50) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++accepted_;
      std::lock_guard<std::mutex> lock(mutex_);
      sessions_.emplace_back([this, fd] {
        Peer peer(fd, stopping_);
        script_(peer);
      });
    }
  }

  Script script_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> sessions_;
};

}  // namespace tubemq::testing
