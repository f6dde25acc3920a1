#include "service/periodic_timer.h"

#include <exception>

#include "log/log.h"

namespace tubemq::service {

std::shared_ptr<PeriodicTimer> PeriodicTimer::Create(Executor executor, std::string name) {
  return std::make_shared<PeriodicTimer>(PrivateTag{}, std::move(executor), std::move(name));
}

// The timer's own strand serialises its state: Start(), FireNow() and Cancel() may come
// from any thread while a tick runs on an I/O thread.
PeriodicTimer::PeriodicTimer(PrivateTag, Executor executor, std::string name)
    : timer_(asio::make_strand(std::move(executor))), name_(std::move(name)) {}

void PeriodicTimer::Start(std::chrono::milliseconds interval,
                          std::chrono::milliseconds first_delay, Task task) {
  asio::dispatch(timer_.get_executor(), [self = shared_from_this(), interval, first_delay,
                                         task = std::move(task)]() mutable {
    self->interval_ = interval;
    self->task_ = std::make_shared<Task>(std::move(task));
    self->active_ = true;
    self->Arm(first_delay);
  });
}

void PeriodicTimer::FireNow() {
  asio::dispatch(timer_.get_executor(), [self = shared_from_this()] {
    if (self->active_) self->Arm(std::chrono::milliseconds(0));
  });
}

void PeriodicTimer::Cancel() {
  asio::dispatch(timer_.get_executor(), [self = shared_from_this()] {
    self->active_ = false;
    self->task_ = nullptr;
    ++self->generation_;
    self->timer_.cancel();
  });
}

void PeriodicTimer::Arm(std::chrono::milliseconds delay) {
  // The generation tells a tick armed before a restart or FireNow() apart from the
  // current one, so a cancelled wait that races its own expiry never runs twice.
  const uint64_t generation = ++generation_;
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this(), generation](const asio::error_code& error) {
    if (error || !self->active_ || generation != self->generation_) return;
    self->Tick();
  });
}

void PeriodicTimer::Tick() {
  const std::shared_ptr<Task> task = task_;
  try {
    if (task && *task) (*task)();
  } catch (const std::exception& e) {
    TUBEMQ_LOG_ERROR("timer '" << name_ << "' task threw: " << e.what());
  } catch (...) {
    TUBEMQ_LOG_ERROR("timer '" << name_ << "' task threw a non-standard exception");
  }
  if (active_) Arm(interval_);
}

}  // namespace tubemq::service
