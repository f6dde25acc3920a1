// native_bench: drives the tubemq C++ core with no Python in the loop, so that the
// benchmark runner (python -m bench) can put the Python facade next to the ceiling of
// our own code. One workload per process; the result is one JSON line on stdout.
//
//   native_bench --master H:P --topic T --mode MODE --size BYTES --count N
//                [--group G] [--rate MSG_PER_S] [--not-found-wait-ms MS]
//
// Modes: produce-sync (one send at a time), produce-async (pipelined up to the
// in-flight window), consume (read N messages of a backlog from the earliest offset
// with a new group, committing each batch after its messages were read) and latency
// (a sender thread at a fixed rate, timestamps in the payload, the main thread
// consuming). Payloads are built before the clock starts.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tubemq/consumer.h"
#include "tubemq/producer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string master;
  std::string topic;
  std::string mode;
  std::string group = "bench_cpp";
  size_t size = 1024;
  int64_t count = 10000;
  double rate = 1000;
  int64_t not_found_wait_ms = 400;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "native_bench: %s\n", what.c_str());
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) Fail("missing value after " + name);
    const std::string value = argv[++i];
    if (name == "--master") args.master = value;
    else if (name == "--topic") args.topic = value;
    else if (name == "--mode") args.mode = value;
    else if (name == "--group") args.group = value;
    else if (name == "--size") args.size = std::stoul(value);
    else if (name == "--count") args.count = std::stoll(value);
    else if (name == "--rate") args.rate = std::stod(value);
    else if (name == "--not-found-wait-ms") args.not_found_wait_ms = std::stoll(value);
    else Fail("unknown option " + name);
  }
  if (args.master.empty() || args.topic.empty() || args.mode.empty()) {
    Fail("--master, --topic and --mode are required");
  }
  if (args.size < 8) Fail("--size must be at least 8 (latency payloads carry a timestamp)");
  return args;
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A few distinct random payloads, cycled, so that compression or caching of one value
// cannot flatter anyone, and so that nothing is generated while the clock runs.
std::vector<std::string> Payloads(size_t size) {
  std::mt19937_64 random(7);
  std::vector<std::string> out(16);
  for (std::string& payload : out) {
    payload.resize(size);
    for (char& c : payload) c = static_cast<char>('a' + random() % 26);
  }
  return out;
}

tubemq::ClientConfig Config(const Args& args) {
  tubemq::ClientConfig config;
  config.masters = args.master;
  config.heartbeat_period_ms = 1000;  // joins and rebalances settle faster
  return config;
}

void Check(const tubemq::Status& status, const char* what) {
  if (!status.ok()) Fail(std::string(what) + ": " + status.ToString());
}

// Owns a started producer and closes it on every way out.
class ProducerSession {
 public:
  ProducerSession(const Args& args, int32_t max_in_flight)
      : producer_(Config(args), Options(max_in_flight)) {
    Check(producer_.Usable(), "producer config");
    Check(producer_.Start().get(), "producer start");
    Check(producer_.Publish({args.topic}).get(), "publish");
  }
  ~ProducerSession() {
    producer_.Close().get();
    producer_.ReleaseService();
  }
  tubemq::Producer& operator*() { return producer_; }
  tubemq::Producer* operator->() { return &producer_; }

 private:
  static tubemq::ProducerOptions Options(int32_t max_in_flight) {
    tubemq::ProducerOptions options;
    options.max_in_flight = max_in_flight;
    return options;
  }
  tubemq::Producer producer_;
};

class ConsumerSession {
 public:
  ConsumerSession(const Args& args, tubemq::ConsumePosition position)
      : consumer_(Config(args), Options(args, position)) {
    Check(consumer_.Usable(), "consumer config");
    Check(consumer_.Start().get(), "consumer start");
  }
  ~ConsumerSession() {
    consumer_.Close().get();
    consumer_.ReleaseService();
  }
  tubemq::Consumer* operator->() { return &consumer_; }

 private:
  static tubemq::ConsumerOptions Options(const Args& args, tubemq::ConsumePosition position) {
    tubemq::ConsumerOptions options;
    options.group = args.group;
    options.topics[args.topic] = {};
    options.position = position;
    options.msg_not_found_wait_ms = args.not_found_wait_ms;
    return options;
  }
  tubemq::Consumer consumer_;
};

tubemq::OutgoingMessage Message(const std::string& topic, const std::string& body) {
  tubemq::OutgoingMessage message;
  message.topic = topic;
  message.body = body;  // the one copy a send makes, as in the Python binding
  return message;
}

// Counts completions of asynchronous sends; the callbacks run on I/O threads.
class Completions {
 public:
  void Done(bool ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    if (!ok) ++failed_;
    if (done_ >= wanted_) all_done_.notify_all();
  }
  // Waits until `wanted` sends have completed; returns how many failed.
  int64_t WaitFor(int64_t wanted) {
    std::unique_lock<std::mutex> lock(mutex_);
    wanted_ = wanted;
    all_done_.wait(lock, [&] { return done_ >= wanted_; });
    return failed_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_done_;
  int64_t done_ = 0;
  int64_t failed_ = 0;
  int64_t wanted_ = INT64_MAX;
};

struct Result {
  int64_t count = 0;
  int64_t bytes = 0;
  double elapsed_s = 0;
  double cpu_s = 0;
  std::vector<double> latencies_ms;
};

Result ProduceSync(const Args& args) {
  const std::vector<std::string> payloads = Payloads(args.size);
  ProducerSession producer(args, 1);
  Result result;
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  for (int64_t i = 0; i < args.count; ++i) {
    producer->AcquireSendSlot(std::chrono::hours(1));
    // Shared: the I/O thread may still be inside set_value() when get() returns.
    auto done = std::make_shared<std::promise<tubemq::Status>>();
    auto outcome = done->get_future();
    producer->SendAsync(Message(args.topic, payloads[i % payloads.size()]),
                        [done](const tubemq::Status& status, tubemq::SendResult&&) {
                          done->set_value(status);
                        });
    Check(outcome.get(), "send");
    result.bytes += static_cast<int64_t>(args.size);
  }
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  result.count = args.count;
  return result;
}

Result ProduceAsync(const Args& args) {
  const std::vector<std::string> payloads = Payloads(args.size);
  ProducerSession producer(args, 20000);
  Completions completions;
  Result result;
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  for (int64_t i = 0; i < args.count; ++i) {
    producer->AcquireSendSlot(std::chrono::hours(1));
    producer->SendAsync(Message(args.topic, payloads[i % payloads.size()]),
                        [&completions](const tubemq::Status& status, tubemq::SendResult&&) {
                          completions.Done(status.ok());
                        });
  }
  const int64_t failed = completions.WaitFor(args.count);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  if (failed != 0) Fail(std::to_string(failed) + " sends failed");
  result.count = args.count;
  result.bytes = args.count * static_cast<int64_t>(args.size);
  return result;
}

bool NothingNow(const tubemq::Status& status) {
  const auto code = status.code();
  return code == tubemq::ErrorCode::kNotFound || code == tubemq::ErrorCode::kNoPartitionAssigned ||
         code == tubemq::ErrorCode::kAllPartitionWaiting ||
         code == tubemq::ErrorCode::kAllPartitionInUse;
}

Result Consume(const Args& args) {
  ConsumerSession consumer(args, tubemq::ConsumePosition::kEarliest);
  Result result;
  // Joining the group and the first fetch are not part of the measure, as for Python.
  tubemq::ReceivedBatch batch;
  for (;;) {
    tubemq::Status status = consumer->Poll(std::chrono::milliseconds(1000), batch);
    if (status.ok() && !batch.messages.empty()) break;
    if (!status.ok() && !NothingNow(status)) Check(status, "poll");
  }
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  uint64_t checksum = 0;  // reads every value's first byte, as a user's code would
  for (;;) {
    for (const tubemq::ReceivedMessage& message : batch.messages) {
      if (result.count == args.count) break;
      checksum += static_cast<unsigned char>(message.body.empty() ? 0 : message.body[0]);
      result.bytes += static_cast<int64_t>(message.body.size());
      ++result.count;
    }
    Check(consumer->Confirm(batch.confirm_context, true), "commit");
    if (result.count >= args.count) break;
    // A fetch that found one partition empty answers 404 at once while others still
    // hold data: only a long run of "nothing now" means the backlog is gone.
    const auto give_up = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      batch = tubemq::ReceivedBatch();
      tubemq::Status status = consumer->Poll(std::chrono::milliseconds(100), batch);
      if (status.ok()) break;
      if (!NothingNow(status)) Check(status, "poll");
      if (Clock::now() > give_up) {
        Fail("the backlog ended after " + std::to_string(result.count) + " messages");
      }
    }
  }
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  if (checksum == 0) Fail("every value was empty");
  return result;
}

Result Latency(const Args& args) {
  std::vector<std::string> payloads = Payloads(args.size);
  ConsumerSession consumer(args, tubemq::ConsumePosition::kLatest);
  ProducerSession producer(args, 20000);
  // The group owns every partition once the first rebalance is done; until then a send
  // could land in a partition nobody reads yet. Wait for the held partitions to settle.
  const size_t partitions = producer->Partitions(args.topic).size();
  const auto join_deadline = Clock::now() + std::chrono::seconds(60);
  tubemq::ReceivedBatch batch;
  while (consumer->HeldPartitions().size() < partitions) {
    if (Clock::now() > join_deadline) Fail("the consumer never held every partition");
    consumer->Poll(std::chrono::milliseconds(100), batch);
  }
  // Polling once every partition answered "nothing new" puts the consumer in its
  // steady state before the first timed message.
  for (int i = 0; i < 8; ++i) consumer->Poll(std::chrono::milliseconds(50), batch);

  Completions completions;
  std::atomic<bool> send_failed{false};
  Result result;
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  std::thread sender([&] {
    const auto period = std::chrono::duration<double>(1.0 / args.rate);
    for (int64_t i = 0; i < args.count; ++i) {
      std::this_thread::sleep_until(started + std::chrono::duration_cast<Clock::duration>(
                                                  period * static_cast<double>(i)));
      std::string& body = payloads[i % payloads.size()];
      const int64_t now = MonotonicNs();
      std::memcpy(body.data(), &now, sizeof now);
      producer->AcquireSendSlot(std::chrono::hours(1));
      producer->SendAsync(Message(args.topic, body),
                          [&](const tubemq::Status& status, tubemq::SendResult&&) {
                            if (!status.ok()) send_failed = true;
                            completions.Done(status.ok());
                          });
    }
  });
  result.latencies_ms.reserve(args.count);
  const auto give_up = started + std::chrono::duration<double>(args.count / args.rate + 30);
  while (result.count < args.count && Clock::now() < give_up) {
    batch = tubemq::ReceivedBatch();
    tubemq::Status status = consumer->Poll(std::chrono::milliseconds(100), batch);
    if (NothingNow(status)) continue;
    Check(status, "poll");
    const int64_t now = MonotonicNs();
    for (const tubemq::ReceivedMessage& message : batch.messages) {
      if (message.body.size() < sizeof(int64_t)) continue;
      int64_t sent = 0;
      std::memcpy(&sent, message.body.data(), sizeof sent);
      result.latencies_ms.push_back((now - sent) / 1e6);
      result.bytes += static_cast<int64_t>(message.body.size());
      ++result.count;
    }
    Check(consumer->Confirm(batch.confirm_context, true), "commit");
  }
  sender.join();
  completions.WaitFor(args.count);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  if (send_failed) Fail("sends failed");
  return result;
}

double Percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return -1;
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[index];
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  Result result;
  if (args.mode == "produce-sync") result = ProduceSync(args);
  else if (args.mode == "produce-async") result = ProduceAsync(args);
  else if (args.mode == "consume") result = Consume(args);
  else if (args.mode == "latency") result = Latency(args);
  else Fail("unknown mode " + args.mode);

  std::string latency = "null";
  if (!result.latencies_ms.empty()) {
    std::vector<double>& lat = result.latencies_ms;
    std::sort(lat.begin(), lat.end());
    char text[256];
    std::snprintf(text, sizeof text,
                  "{\"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f, \"max\": %.3f}",
                  Percentile(lat, 0.50), Percentile(lat, 0.95), Percentile(lat, 0.99), lat.back());
    latency = text;
  }
  std::printf(
      "{\"client\": \"cpp\", \"mode\": \"%s\", \"count\": %lld, \"bytes\": %lld, "
      "\"elapsed_s\": %.6f, \"cpu_s\": %.6f, \"latency_ms\": %s}\n",
      args.mode.c_str(), static_cast<long long>(result.count),
      static_cast<long long>(result.bytes), result.elapsed_s, result.cpu_s, latency.c_str());
  return 0;
}
