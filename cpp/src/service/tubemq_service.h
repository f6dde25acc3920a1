// TubeMQService: the process-wide singleton that owns the asio I/O threads, the timers
// and the connection pool. Clients hold it through a ServiceLease: the first lease
// starts the threads, the last one stops them, and a later lease starts them again.
// Nothing starts at load time.
//
// fork(): threads do not survive fork(), and the inherited epoll set is shared with
// the parent. A pthread_atfork child handler therefore sets the inherited engine
// aside, untouched and never destroyed (destroying it would unregister the parent's
// sockets and join threads that do not exist); the child's next lease builds a new one.
#pragma once

#include <asio.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "net/connection_pool.h"
#include "service/periodic_timer.h"
#include "tubemq/service.h"

namespace tubemq::service {

struct EngineOptions {
  // One thread drives every connection, so a connection's reads, writes and timers
  // never hop between threads: with two, the threads serving one busy broker
  // connection kept waking each other (issue 25), and async sends cost 25-35 % more
  // CPU per message. A process talking to many busy brokers may want more
  // (TUBEMQ_IO_THREADS).
  int io_threads = 1;
  std::chrono::milliseconds idle_connection_timeout{180000};
  std::chrono::milliseconds idle_sweep_period{20000};
  net::ConnectionOptions connection{};
};

// The I/O machinery proper: one io_context, its threads, the pool.
class IoEngine {
 public:
  explicit IoEngine(EngineOptions options);
  ~IoEngine();
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  asio::io_context& io() { return io_; }
  net::ConnectionPool& pool() { return pool_; }
  int thread_count() const { return static_cast<int>(threads_.size()); }
  bool OnIoThread() const;

  void StartThreads();
  void StopThreads();

 private:
  const EngineOptions options_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  net::ConnectionPool pool_;
  std::shared_ptr<PeriodicTimer> idle_sweep_;
};

class TubeMQService {
 public:
  static TubeMQService& Instance();

  // Starts the engine if this is the first user; returns it.
  std::shared_ptr<IoEngine> Acquire();
  // Stops the engine when the last user leaves. Must not be called on an I/O thread.
  void Release();

  ServiceState State();

  // Keeps an object alive and untouched for the rest of the process. For what a
  // forked child inherits: destroying it would touch the parent's I/O state.
  void KeepForever(std::shared_ptr<void> object);

 private:
  TubeMQService();
  static void PrepareFork();
  static void ParentAfterFork();
  static void ChildAfterFork();
  static void StopAtExit();

  std::mutex mutex_;
  std::shared_ptr<IoEngine> engine_;
  int users_ = 0;
  int generation_ = 0;
  // Engines and clients inherited through fork(), kept for the process's life.
  std::vector<std::shared_ptr<void>> kept_forever_;
};

// RAII handle on the service held by each client. A lease taken before fork() is
// inert in the child: releasing it there does nothing.
class ServiceLease {
 public:
  ServiceLease();
  ~ServiceLease();
  ServiceLease(const ServiceLease&) = delete;
  ServiceLease& operator=(const ServiceLease&) = delete;

  IoEngine& engine() const { return *engine_; }
  const std::shared_ptr<IoEngine>& engine_ptr() const { return engine_; }
  // True when this lease was taken in another process (the parent of a fork).
  bool inherited() const;
  // Gives the lease back early (idempotent); the destructor then does nothing.
  void Release();

 private:
  std::shared_ptr<IoEngine> engine_;
  int pid_;
  bool released_ = false;
};

}  // namespace tubemq::service
