// Outcomes of asynchronous sends, handed from I/O threads to Python. An I/O thread only
// pushes (a short lock, no Python); the facade's delivery thread drains with the GIL
// released and completes futures and callbacks itself (design.md §2).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "tubemq/message.h"
#include "tubemq/status.h"

namespace tubemq::bindings {

struct Delivery {
  uint64_t token = 0;
  Status status;
  SendResult result;
};

class DeliveryQueue {
 public:
  void Push(Delivery delivery) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(delivery));
    }
    ready_.notify_one();
  }

  // Waits up to `wait` for at least one delivery (or Wake()), then takes up to `max`.
  //
  // Once the first delivery is there, it lingers up to kLinger for more (unless `max`
  // are already waiting): every drain makes the delivery thread take the GIL, and a
  // sending thread that releases the GIL around each send then waits for it, so fewer,
  // larger drains are what keeps send_async() cheap. Futures complete at most kLinger
  // later for it.
  std::vector<Delivery> Drain(std::chrono::milliseconds wait, size_t max) {
    static constexpr auto kLinger = std::chrono::milliseconds(2);
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t woken = wake_generation_;
    ready_.wait_for(lock, wait, [&] { return !items_.empty() || wake_generation_ != woken; });
    if (!items_.empty() && wake_generation_ == woken) {
      ready_.wait_for(lock, kLinger,
                      [&] { return items_.size() >= max || wake_generation_ != woken; });
    }
    std::vector<Delivery> out;
    while (!items_.empty() && out.size() < max) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    return out;
  }

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++wake_generation_;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Delivery> items_;
  uint64_t wake_generation_ = 0;
};

}  // namespace tubemq::bindings
