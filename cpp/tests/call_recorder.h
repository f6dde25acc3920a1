// Support for the connection tests: an asio io_context run by two threads (as the
// service runs it), a recorder that counts how often each request's callback ran, and
// a bounded wait for effects that happen on a connection's strand.
#pragma once

#include <gtest/gtest.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "codec/rpc_envelope.h"
#include "net/client_connection.h"

namespace tubemq::testing {

struct Outcome {
  Status status;
  codec::RpcReply reply;
};

// Counts completions per request id, so a second completion of any request is caught.
// `Total()` counts every callback invocation, including unexpected extra ones.
class Recorder {
 public:
  explicit Recorder(size_t expected) : expected_(expected) {}

  net::ClientConnection::Callback Track(int id) {
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

// Two I/O threads on one io_context, stopped and joined when the test ends.
class IoThreadsTest : public ::testing::Test {
 protected:
  IoThreadsTest() : work_(asio::make_work_guard(io_)) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~IoThreadsTest() override {
    work_.reset();
    io_.stop();
    for (auto& thread : threads_) thread.join();
  }

  std::shared_ptr<net::ClientConnection> Connect(
      uint16_t port, std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(2000)) {
    net::ConnectionOptions options;
    options.connect_timeout = connect_timeout;
    return net::ClientConnection::Create(io_, meta::Endpoint{"127.0.0.1", port}, options);
  }

  // A request payload whose body is `body` (the scripted servers echo it back).
  static std::string Payload(const std::string& body) {
    return codec::EncodeRequestPayload(codec::Method::kProducerHeartbeat, 5000, body);
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

// Waits (bounded) until `predicate` holds; for effects posted to a strand.
template <typename Predicate>
bool Eventually(Predicate predicate,
                std::chrono::milliseconds bound = std::chrono::milliseconds(2000)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tubemq::testing
