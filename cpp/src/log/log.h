// Logging macros of the core. They format only when the level is enabled, and the one
// appender hands records to the Python-drained queue (see tubemq/logging.h).
#pragma once

#include <log4cplus/logger.h>
#include <log4cplus/loggingmacros.h>

#include "log/log_queue.h"

namespace tubemq::log {

// The "tubemq" logger, configured with the queue appender on first use.
log4cplus::Logger& Logger();

// The process-wide record queue. It is the one piece of process state besides the
// TubeMQService singleton: it must exist before any client and outlive all of them.
LogQueue& Queue();

}  // namespace tubemq::log

#define TUBEMQ_LOG_DEBUG(expr) LOG4CPLUS_DEBUG(::tubemq::log::Logger(), expr)
#define TUBEMQ_LOG_INFO(expr) LOG4CPLUS_INFO(::tubemq::log::Logger(), expr)
#define TUBEMQ_LOG_WARN(expr) LOG4CPLUS_WARN(::tubemq::log::Logger(), expr)
#define TUBEMQ_LOG_ERROR(expr) LOG4CPLUS_ERROR(::tubemq::log::Logger(), expr)
