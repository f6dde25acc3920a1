// PeriodicTimer: runs a task every `interval` on a strand of the given executor. Its
// state is touched only on that strand, so Start(), FireNow() and Cancel() may be
// called from any thread and take effect in the order they were called. The task's exceptions are caught and logged, and the timer always re-arms,
// so one bad tick never silently stops heartbeats.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace tubemq::service {

class PeriodicTimer : public std::enable_shared_from_this<PeriodicTimer> {
 public:
  using Executor = asio::any_io_executor;
  using Task = std::function<void()>;

  struct PrivateTag {};
  static std::shared_ptr<PeriodicTimer> Create(Executor executor, std::string name);
  PeriodicTimer(PrivateTag, Executor executor, std::string name);

  // Starts (or restarts) the schedule: the first run after `first_delay`.
  void Start(std::chrono::milliseconds interval, std::chrono::milliseconds first_delay,
             Task task);
  // Runs the task as soon as possible, then keeps the usual interval from there.
  void FireNow();
  void Cancel();

 private:
  void Arm(std::chrono::milliseconds delay);
  void Tick();

  asio::steady_timer timer_;
  const std::string name_;
  std::chrono::milliseconds interval_{0};
  // Shared so that a tick keeps its task alive while the task cancels or restarts
  // this timer (which replaces task_ on the same strand, in the middle of the call).
  std::shared_ptr<Task> task_;
  bool active_ = false;
  uint64_t generation_ = 0;
};

}  // namespace tubemq::service
