#include "log/log_queue.h"

namespace tubemq::log {

void LogQueue::Push(LogRecord record) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (records_.size() >= capacity_) {
      records_.pop_front();
      ++dropped_;
    }
    records_.push_back(std::move(record));
  }
  ready_.notify_one();
}

std::vector<LogRecord> LogQueue::Drain(std::chrono::milliseconds wait, size_t max_records) {
  std::vector<LogRecord> out;
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = wake_generation_;
  ready_.wait_for(lock, wait,
                  [&] { return !records_.empty() || wake_generation_ != generation; });
  const size_t count = std::min(max_records, records_.size());
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(std::move(records_.front()));
    records_.pop_front();
  }
  return out;
}

void LogQueue::WakeAll() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++wake_generation_;
  }
  ready_.notify_all();
}

uint64_t LogQueue::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

}  // namespace tubemq::log
