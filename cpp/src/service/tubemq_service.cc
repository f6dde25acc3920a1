#include "service/tubemq_service.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

#include "log/log.h"

namespace tubemq::service {
namespace {

constexpr auto kStopDrainBound = std::chrono::milliseconds(1000);

int IoThreadsFromEnvironment() {
  // One knob for deployments that want more I/O threads than the default.
  if (const char* text = std::getenv("TUBEMQ_IO_THREADS")) {
    const int value = std::atoi(text);
    if (value >= 1 && value <= 64) return value;
  }
  return EngineOptions{}.io_threads;
}

}  // namespace

// --- IoEngine ----------------------------------------------------------------------

IoEngine::IoEngine(EngineOptions options)
    : options_(options), pool_(io_, options.connection) {}

IoEngine::~IoEngine() { StopThreads(); }

bool IoEngine::OnIoThread() const {
  const auto me = std::this_thread::get_id();
  for (const auto& thread : threads_) {
    if (thread.get_id() == me) return true;
  }
  return false;
}

void IoEngine::StartThreads() {
  if (!threads_.empty()) return;
  io_.restart();
  work_.emplace(asio::make_work_guard(io_));
  for (int i = 0; i < options_.io_threads; ++i) {
    threads_.emplace_back([this, i] {
      const std::string name = "tubemq-io-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      // Handlers catch their own exceptions; this loop is the last line of defence so
      // that one escaped exception cannot end an I/O thread for good.
      for (;;) {
        try {
          io_.run();
          return;
        } catch (const std::exception& e) {
          TUBEMQ_LOG_ERROR("I/O handler threw: " << e.what());
        } catch (...) {
          TUBEMQ_LOG_ERROR("I/O handler threw a non-standard exception");
        }
      }
    });
  }
  idle_sweep_ = PeriodicTimer::Create(io_.get_executor(), "idle-connection-sweep");
  idle_sweep_->Start(options_.idle_sweep_period, options_.idle_sweep_period,
                     [this] { pool_.CloseIdle(options_.idle_connection_timeout); });
  TUBEMQ_LOG_DEBUG("I/O service started with " << threads_.size() << " threads");
}

void IoEngine::StopThreads() {
  if (threads_.empty()) return;
  if (idle_sweep_) idle_sweep_->Cancel();
  pool_.CloseAll(Status(ErrorCode::kServiceStopped, "the TubeMQ I/O service stopped"));
  work_.reset();
  // Let the posted closes and cancellations run (every pending request then gets its
  // error), but never wait long: the threads are stopped regardless afterwards.
  const auto deadline = std::chrono::steady_clock::now() + kStopDrainBound;
  while (!io_.stopped() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  io_.stop();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  idle_sweep_.reset();
  TUBEMQ_LOG_DEBUG("I/O service stopped");
}

// --- TubeMQService -----------------------------------------------------------------

TubeMQService& TubeMQService::Instance() {
  // Deliberately never destroyed: static destruction at exit would race I/O threads of
  // clients that were never closed, and engines inherited through fork() must never
  // be destroyed. StopAtExit() stops the threads in an orderly way instead.
  static TubeMQService* const instance = new TubeMQService();
  return *instance;
}

TubeMQService::TubeMQService() {
  log::Logger();  // configure logging before any thread can log
  pthread_atfork(&TubeMQService::PrepareFork, &TubeMQService::ParentAfterFork,
                 &TubeMQService::ChildAfterFork);
  std::atexit(&TubeMQService::StopAtExit);
}

std::shared_ptr<IoEngine> TubeMQService::Acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!engine_) {
    EngineOptions options;
    options.io_threads = IoThreadsFromEnvironment();
    engine_ = std::make_shared<IoEngine>(options);
    ++generation_;
  }
  if (users_++ == 0) engine_->StartThreads();
  return engine_;
}

void TubeMQService::Release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0) return;
  if (--users_ > 0 || !engine_) return;
  if (engine_->OnIoThread()) {
    // Joining from an I/O thread would wait for itself. Keep the threads; the next
    // Release() from an application thread, or process exit, stops them.
    TUBEMQ_LOG_WARN("last client released on an I/O thread; I/O threads keep running");
    return;
  }
  engine_->StopThreads();
}

ServiceState TubeMQService::State() {
  std::lock_guard<std::mutex> lock(mutex_);
  ServiceState state;
  state.users = users_;
  state.generation = generation_;
  if (engine_) {
    state.io_threads = engine_->thread_count();
    state.connections = engine_->pool().size();
  }
  return state;
}

void TubeMQService::KeepForever(std::shared_ptr<void> object) {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_forever_.push_back(std::move(object));
}

void TubeMQService::PrepareFork() {
  // Hold our locks across fork() so the child never inherits one held by a thread
  // that does not exist there.
  Instance().mutex_.lock();
  log::Queue().LockForFork();
}

void TubeMQService::ParentAfterFork() {
  log::Queue().UnlockAfterFork();
  Instance().mutex_.unlock();
}

void TubeMQService::ChildAfterFork() {
  log::Queue().UnlockAfterFork();
  TubeMQService& service = Instance();
  if (service.engine_) service.kept_forever_.push_back(std::move(service.engine_));
  service.engine_.reset();
  service.users_ = 0;
  service.mutex_.unlock();
}

void TubeMQService::StopAtExit() {
  TubeMQService& service = Instance();
  std::lock_guard<std::mutex> lock(service.mutex_);
  if (service.engine_ && !service.engine_->OnIoThread()) service.engine_->StopThreads();
}

// --- ServiceLease ------------------------------------------------------------------

ServiceLease::ServiceLease() : engine_(TubeMQService::Instance().Acquire()), pid_(getpid()) {}

ServiceLease::~ServiceLease() { Release(); }

bool ServiceLease::inherited() const { return pid_ != getpid(); }

void ServiceLease::Release() {
  if (released_) return;
  released_ = true;
  if (!inherited()) TubeMQService::Instance().Release();
}

}  // namespace tubemq::service

namespace tubemq {

ServiceState GetServiceState() { return service::TubeMQService::Instance().State(); }

}  // namespace tubemq
