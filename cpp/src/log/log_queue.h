// A bounded, thread-safe queue of log records. When Python falls behind, the oldest
// records are dropped and counted: logging must never block an I/O thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "tubemq/logging.h"

namespace tubemq::log {

class LogQueue {
 public:
  explicit LogQueue(size_t capacity) : capacity_(capacity) {}

  void Push(LogRecord record);
  std::vector<LogRecord> Drain(std::chrono::milliseconds wait, size_t max_records);
  void WakeAll();
  uint64_t dropped() const;

  // fork() support: the prepare handler locks, parent and child unlock, so the child
  // never inherits a mutex held by a thread that does not exist there.
  void LockForFork() { mutex_.lock(); }
  void UnlockAfterFork() { mutex_.unlock(); }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<LogRecord> records_;
  uint64_t dropped_ = 0;
  uint64_t wake_generation_ = 0;
};

}  // namespace tubemq::log
