#include "log/log.h"

#include <log4cplus/appender.h>
#include <log4cplus/initializer.h>
#include <log4cplus/spi/loggingevent.h>

#include <chrono>
#include <memory>

// Exported by liblog4cplus 2.0 but declared only in its private headers. Its thread pool
// serves asynchronous appenders, which we never use.
namespace log4cplus {
LOG4CPLUS_EXPORT void shutdownThreadPool();
}  // namespace log4cplus

namespace tubemq::log {
namespace {

// log4cplus starts a pool of worker threads when the library is loaded, i.e. when
// `import tubemq` loads the extension. Idle threads we never use would break two rules:
// nothing starts threads at import, and a fork()ed child must not inherit a pool whose
// threads it does not have (its exit would try to join them). Stop the pool right after
// the library's own initialisation, which the dynamic loader runs before ours.
const bool kLibraryPoolStopped = [] {
  log4cplus::shutdownThreadPool();
  return true;
}();

constexpr size_t kQueueCapacity = 10000;

int ToPythonLevel(log4cplus::LogLevel level) {
  if (level < log4cplus::DEBUG_LOG_LEVEL) return 5;  // TRACE
  return static_cast<int>(level / 1000);            // 10000 -> 10, 20000 -> 20, ...
}

log4cplus::LogLevel FromPythonLevel(int level) {
  if (level < 10) return log4cplus::TRACE_LOG_LEVEL;
  return static_cast<log4cplus::LogLevel>(level * 1000);
}

// Turns each log4cplus event into a LogRecord on the queue; never blocks for long and
// never touches Python.
class QueueAppender final : public log4cplus::Appender {
 public:
  QueueAppender() { setName(LOG4CPLUS_TEXT("tubemq-queue")); }
  ~QueueAppender() override { destructorImpl(); }
  void close() override { closed = true; }

 protected:
  void append(const log4cplus::spi::InternalLoggingEvent& event) override {
    LogRecord record;
    record.level = ToPythonLevel(event.getLogLevel());
    record.logger = event.getLoggerName();
    record.message = event.getMessage();
    record.created =
        std::chrono::duration<double>(event.getTimestamp().time_since_epoch()).count();
    record.thread = event.getThread();
    Queue().Push(std::move(record));
  }
};

log4cplus::Logger ConfigureLogger() {
  log4cplus::initialize();
  log4cplus::Logger logger = log4cplus::Logger::getInstance(LOG4CPLUS_TEXT("tubemq"));
  logger.removeAllAppenders();
  logger.setAdditivity(false);  // nothing reaches the root logger, so no files, no stderr
  logger.addAppender(log4cplus::SharedAppenderPtr(new QueueAppender()));
  logger.setLogLevel(log4cplus::WARN_LOG_LEVEL);
  return logger;
}

}  // namespace

LogQueue& Queue() {
  // Never destroyed. A forked child inherits the queue with the parent's dispatcher
  // thread counted as a waiter on its condition variable; destroying it at exit
  // (pthread_cond_destroy waits for waiters to leave) would hang the child forever.
  static LogQueue* const queue = new LogQueue(kQueueCapacity);
  return *queue;
}

log4cplus::Logger& Logger() {
  static log4cplus::Logger logger = ConfigureLogger();
  return logger;
}

}  // namespace tubemq::log

namespace tubemq {

std::vector<LogRecord> DrainLogRecords(std::chrono::milliseconds wait, size_t max_records) {
  log::Logger();  // make sure the appender exists before anyone waits on the queue
  return log::Queue().Drain(wait, max_records);
}

void SetLogLevel(int python_level) {
  log::Logger().setLogLevel(log::FromPythonLevel(python_level));
}

int GetLogLevel() { return log::ToPythonLevel(log::Logger().getLogLevel()); }

uint64_t DroppedLogRecords() { return log::Queue().dropped(); }

void WakeLogDrainers() { log::Queue().WakeAll(); }

}  // namespace tubemq
