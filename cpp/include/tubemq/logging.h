// Log records of the core, handed to Python through a queue.
//
// The core logs with log4cplus. Its only appender puts records into a bounded queue
// that Python drains from a thread of its own (or from a blocking call), so no native
// thread ever calls into Python to log. Levels use Python's numbers (10 = DEBUG ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tubemq {

struct LogRecord {
  int level = 20;         // Python logging level
  std::string logger;     // "tubemq" or a child such as "tubemq.producer"
  std::string message;
  double created = 0;     // seconds since the epoch
  std::string thread;     // native thread name or id
};

// Waits up to `wait` for at least one record, then returns up to `max_records`.
std::vector<LogRecord> DrainLogRecords(std::chrono::milliseconds wait, size_t max_records);

// Records below this Python level are not even formatted. Default: WARNING (30).
void SetLogLevel(int python_level);
int GetLogLevel();

// Records discarded because Python did not drain the queue in time.
uint64_t DroppedLogRecords();

// Wakes every DrainLogRecords waiter (used when the Python dispatcher stops).
void WakeLogDrainers();

}  // namespace tubemq
