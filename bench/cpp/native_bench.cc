// native_bench: drives the tubemq C++ core with no Python in the loop, so that the
// benchmark runner (python -m bench) can put the Python facade next to the ceiling of
// our own code. A long-lived process: the runner keeps it for the cold window, the
// warm-up and every measured window, and each window answers one JSON line on stdout.
//
//   native_bench --master H:P
//   stdin:  window MODE SIZE TOPIC SECONDS MAX_COUNT ATTRS RATE | quit
//
// Modes: produce-sync (one send at a time), produce-async (pipelined up to the
// in-flight window), consume and consume-attrs (read a backlog from the earliest offset
// with a new group, committing each batch after its messages were read; -attrs also
// reads both attributes of every message) and latency (a sender thread at a fixed rate,
// timestamps in the payload, the main thread consuming). Payloads are built before the
// clock starts. The protocol is that of bench/py_worker.py.
#include <sys/resource.h>
#include <unistd.h>

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
  std::string group = "bench_cpp";
  std::string mode;
  std::string topic;
  size_t size = 1024;
  double seconds = 1;
  int64_t max_count = 10000;
  bool attrs = false;
  double rate = 1000;
  int64_t not_found_wait_ms = tubemq::ConsumerOptions().msg_not_found_wait_ms;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "native_bench: %s\n", what.c_str());
  std::exit(2);
}

// A window's failure: answered to the runner as {"error": ...}, the process lives on.
struct WindowError {
  std::string what;
};

// latency-tuned: the ceiling of the rest after "nothing new" that a user after low
// latency sets (bench/py_worker.py, the same for every client).
constexpr int64_t kTunedNotFoundWaitMs = 10;
constexpr size_t kPartitions = 4;  // of every bench topic (bench/runner.py)
// A latency sender's shortest sleep: Java's Thread.sleep(ms, ns) sleeps whole
// milliseconds, so every driver wakes at most once per millisecond and sends every
// message due by then (at 10 000 msg/s, bursts of about 10).
constexpr std::chrono::milliseconds kSenderTick{1};
// A latency window's percentiles are those of the messages sent after its first second;
// the first message's delay, which ends the consumer's idle spell, is reported apart
// (LATENCY_SETTLE_S in bench/py_worker.py says why).
constexpr std::chrono::seconds kLatencySettle{1};

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
  if (!status.ok()) throw WindowError{std::string(what) + ": " + status.ToString()};
}

// The producer of the process, started once and kept for every window (as an
// application keeps one); each topic is published before its first window.
class ProducerSession {
 public:
  explicit ProducerSession(const Args& args) : producer_(Config(args), Options()) {
    Check(producer_.Usable(), "producer config");
    Check(producer_.Start().get(), "producer start");
  }
  ~ProducerSession() {
    producer_.Close().get();
    producer_.ReleaseService();
  }
  tubemq::Producer& Ready(const std::string& topic) {
    const std::vector<std::string> published = producer_.PublishedTopics();
    if (std::find(published.begin(), published.end(), topic) == published.end()) {
      Check(producer_.Publish({topic}).get(), "publish");
    }
    return producer_;
  }

 private:
  static tubemq::ProducerOptions Options() {
    tubemq::ProducerOptions options;
    options.max_in_flight = 20000;  // the window of every driver
    return options;
  }
  tubemq::Producer producer_;
};

// A consumer of a new group for one window.
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

tubemq::OutgoingMessage Message(const Args& args, const std::string& body) {
  tubemq::OutgoingMessage message;
  message.topic = args.topic;
  message.body = body;  // the one copy a send makes, as in the Python binding
  if (args.attrs) message.attributes = {{"region", "eu-west"}, {"tenant", "bench"}};
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
  std::vector<double> latencies_ms;  // of the messages sent after kLatencySettle
  double first_latency_ms = 0;       // of the window's first message
};

// Sends until the window's time or count is up; the clock is read every 256 sends.
Result Produce(const Args& args, ProducerSession& session, bool async) {
  const std::vector<std::string> payloads = Payloads(args.size);
  tubemq::Producer& producer = session.Ready(args.topic);
  Completions completions;
  Result result;
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(args.seconds));
  for (int64_t i = 0; i < args.max_count; ++i) {
    if ((i & 255) == 0 && i > 0 && Clock::now() >= deadline) break;
    producer.AcquireSendSlot(std::chrono::hours(1));
    if (async) {
      producer.SendAsync(Message(args, payloads[i % payloads.size()]),
                         [&completions](const tubemq::Status& status, tubemq::SendResult&&) {
                           completions.Done(status.ok());
                         });
    } else {
      // Shared: the I/O thread may still be inside set_value() when get() returns.
      auto done = std::make_shared<std::promise<tubemq::Status>>();
      auto outcome = done->get_future();
      producer.SendAsync(Message(args, payloads[i % payloads.size()]),
                         [done](const tubemq::Status& status, tubemq::SendResult&&) {
                           done->set_value(status);
                         });
      Check(outcome.get(), "send");
    }
    ++result.count;
  }
  if (async && completions.WaitFor(result.count) != 0) throw WindowError{"sends failed"};
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  result.bytes = result.count * static_cast<int64_t>(args.size);
  return result;
}

bool NothingNow(const tubemq::Status& status) {
  const auto code = status.code();
  return code == tubemq::ErrorCode::kNotFound || code == tubemq::ErrorCode::kNoPartitionAssigned ||
         code == tubemq::ErrorCode::kAllPartitionWaiting ||
         code == tubemq::ErrorCode::kAllPartitionInUse;
}

// Reads the backlog from its start with a new group, from the first message to the
// window's end; consume-attrs also reads both attributes of every message.
Result Consume(const Args& args, bool read_attrs) {
  ConsumerSession consumer(args, tubemq::ConsumePosition::kEarliest);
  Result result;
  // Joining the group and the first fetch are not part of the measure, as for Python.
  tubemq::ReceivedBatch batch;
  const auto join_deadline = Clock::now() + std::chrono::seconds(120);
  for (;;) {
    tubemq::Status status = consumer->Poll(std::chrono::milliseconds(1000), batch);
    if (status.ok() && !batch.messages.empty()) break;
    if (!status.ok() && !NothingNow(status)) Check(status, "poll");
    if (Clock::now() > join_deadline) throw WindowError{"no message within 120 s"};
  }
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(args.seconds));
  uint64_t checksum = 0;  // reads every value's first byte, as a user's code would
  for (;;) {
    for (const tubemq::ReceivedMessage& message : batch.messages) {
      if (result.count == args.max_count) break;
      checksum += static_cast<unsigned char>(message.body.empty() ? 0 : message.body[0]);
      if (read_attrs) {
        for (const auto& [key, value] : message.Properties()) {
          if (key == "region" || key == "tenant") checksum += value.size();
        }
      }
      result.bytes += static_cast<int64_t>(message.body.size());
      ++result.count;
    }
    Check(consumer->Confirm(batch.confirm_context, true), "commit");
    if (result.count >= args.max_count || Clock::now() >= deadline) break;
    // A fetch that found one partition empty answers 404 at once while others still
    // hold data: only a long run of "nothing now" means the backlog is gone.
    const auto give_up = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      batch = tubemq::ReceivedBatch();
      tubemq::Status status = consumer->Poll(std::chrono::milliseconds(100), batch);
      if (status.ok()) break;
      if (!NothingNow(status)) Check(status, "poll");
      if (Clock::now() > give_up) {
        throw WindowError{"the backlog ended after " + std::to_string(result.count) +
                          " messages"};
      }
    }
  }
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  if (checksum == 0) throw WindowError{"every value was empty"};
  return result;
}

// A sender thread at a fixed rate with the send time in the payload; this thread
// consumes with a new group that holds every partition before the first send.
Result Latency(const Args& args, ProducerSession& session) {
  std::vector<std::string> payloads = Payloads(args.size);
  const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(args.seconds * args.rate));
  tubemq::Producer& producer = session.Ready(args.topic);
  ConsumerSession consumer(args, tubemq::ConsumePosition::kLatest);
  const size_t partitions = producer.Partitions(args.topic).size();
  const auto join_deadline = Clock::now() + std::chrono::seconds(60);
  tubemq::ReceivedBatch batch;
  while (consumer->HeldPartitions().size() < partitions) {
    if (Clock::now() > join_deadline) throw WindowError{"the consumer never held every partition"};
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
    for (int64_t i = 0; i < count; ++i) {
      // The pacing every driver shares (bench/py_worker.py, kSenderTick): sleep until the
      // message is due, but at least a tick, then send whatever is due.
      const auto due = started + std::chrono::duration_cast<Clock::duration>(
                                     period * static_cast<double>(i));
      if (const auto now = Clock::now(); due > now) {
        std::this_thread::sleep_for(std::max<Clock::duration>(due - now, kSenderTick));
      }
      std::string& body = payloads[i % payloads.size()];
      const int64_t now = MonotonicNs();
      std::memcpy(body.data(), &now, sizeof now);
      producer.AcquireSendSlot(std::chrono::hours(1));
      producer.SendAsync(Message(args, body),
                         [&](const tubemq::Status& status, tubemq::SendResult&&) {
                           if (!status.ok()) send_failed = true;
                           completions.Done(status.ok());
                         });
    }
  });
  result.latencies_ms.reserve(count);
  const auto give_up = started + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(args.seconds + 30));
  // The send stamps are MonotonicNs(): the steady clock's nanoseconds since its epoch.
  const int64_t settled_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 (started + kLatencySettle).time_since_epoch())
                                 .count();
  while (result.count < count && Clock::now() < give_up) {
    batch = tubemq::ReceivedBatch();
    tubemq::Status status = consumer->Poll(std::chrono::milliseconds(100), batch);
    if (NothingNow(status)) continue;
    Check(status, "poll");
    const int64_t now = MonotonicNs();
    for (const tubemq::ReceivedMessage& message : batch.messages) {
      if (message.body.size() < sizeof(int64_t)) continue;
      int64_t sent = 0;
      std::memcpy(&sent, message.body.data(), sizeof sent);
      if (result.count == 0) result.first_latency_ms = (now - sent) / 1e6;
      if (sent >= settled_ns) result.latencies_ms.push_back((now - sent) / 1e6);
      result.bytes += static_cast<int64_t>(message.body.size());
      ++result.count;
    }
    Check(consumer->Confirm(batch.confirm_context, true), "commit");
  }
  sender.join();
  completions.WaitFor(count);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  if (send_failed) throw WindowError{"sends failed"};
  if (result.latencies_ms.empty()) {
    throw WindowError{"no message arrived after the first second"};
  }
  return result;
}

// A consumer of a new group on a topic nobody writes, polled for the whole window as
// an application waiting for data polls: what waiting costs client and broker.
Result Idle(const Args& args) {
  ConsumerSession consumer(args, tubemq::ConsumePosition::kLatest);
  tubemq::ReceivedBatch batch;
  const auto join_deadline = Clock::now() + std::chrono::seconds(60);
  while (consumer->HeldPartitions().size() < kPartitions) {  // joining is not measured
    if (Clock::now() > join_deadline) throw WindowError{"the consumer never held every partition"};
    consumer->Poll(std::chrono::milliseconds(100), batch);
  }
  Result result;
  const double cpu_before = CpuSeconds();
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(args.seconds));
  while (Clock::now() < deadline) {
    batch = tubemq::ReceivedBatch();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    tubemq::Status status = consumer->Poll(std::min(left, std::chrono::milliseconds(1000)), batch);
    if (status.ok()) {
      result.count += static_cast<int64_t>(batch.messages.size());
      Check(consumer->Confirm(batch.confirm_context, true), "commit");
    } else if (!NothingNow(status)) {
      Check(status, "poll");
    }
  }
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
  result.cpu_s = CpuSeconds() - cpu_before;
  return result;
}

double Percentile(const std::vector<double>& sorted, double q) {
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[index];
}

std::string ToJson(Result& result) {
  std::string latency;
  if (!result.latencies_ms.empty()) {
    std::vector<double>& lat = result.latencies_ms;
    std::sort(lat.begin(), lat.end());
    char text[256];
    std::snprintf(text, sizeof text,
                  ", \"latency_ms\": {\"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f, "
                  "\"p999\": %.3f, \"max\": %.3f, \"first\": %.3f}",
                  Percentile(lat, 0.50), Percentile(lat, 0.95), Percentile(lat, 0.99),
                  Percentile(lat, 0.999), lat.back(), result.first_latency_ms);
    latency = text;
  }
  char text[256];
  std::snprintf(text, sizeof text,
                "{\"count\": %lld, \"bytes\": %lld, \"elapsed_s\": %.6f, \"cpu_s\": %.6f",
                static_cast<long long>(result.count), static_cast<long long>(result.bytes),
                result.elapsed_s, result.cpu_s);
  return text + latency + "}";
}

std::string Escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' ? ' ' : c);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--master") Fail("usage: native_bench --master H:P");
  Args args;
  args.master = argv[2];
  std::printf("{\"ready\": true, \"cpu_s\": %.6f}\n", CpuSeconds());
  std::fflush(stdout);
  std::unique_ptr<ProducerSession> producer;  // started by the first window that sends
  int64_t groups = 0;
  std::string line;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, stdin) != nullptr) {
    // window MODE SIZE TOPIC SECONDS MAX_COUNT ATTRS RATE (bench/py_worker.py)
    char mode[64], topic[256];
    unsigned long size = 0;
    double seconds = 0, rate = 0;
    long long max_count = 0;
    int attrs = 0;
    if (std::strncmp(buffer, "quit", 4) == 0) break;
    if (std::sscanf(buffer, "window %63s %lu %255s %lf %lld %d %lf", mode, &size, topic,
                    &seconds, &max_count, &attrs, &rate) != 7) {
      Fail(std::string("bad command ") + buffer);
    }
    args.mode = mode;
    args.topic = topic;
    args.size = size;
    args.seconds = seconds;
    args.max_count = max_count;
    args.attrs = attrs != 0;
    args.rate = rate;
    args.group = "bench_cpp_" + std::to_string(getpid()) + "_" + std::to_string(++groups);
    args.not_found_wait_ms = args.mode == "latency-tuned"
                                 ? kTunedNotFoundWaitMs
                                 : tubemq::ConsumerOptions().msg_not_found_wait_ms;
    std::string answer;
    try {
      if (args.size < 8) throw WindowError{"size must be at least 8 (latency timestamps)"};
      const bool sends = args.mode.rfind("produce", 0) == 0 || args.mode.rfind("latency", 0) == 0;
      if (sends && !producer) producer = std::make_unique<ProducerSession>(args);
      Result result;
      if (args.mode == "produce-sync") result = Produce(args, *producer, false);
      else if (args.mode == "produce-async") result = Produce(args, *producer, true);
      else if (args.mode == "consume") result = Consume(args, false);
      else if (args.mode == "consume-attrs") result = Consume(args, true);
      // Python's consume-batch reads whole batches (poll_batch + values()); this loop
      // already does, so it is the same work.
      else if (args.mode == "consume-batch") result = Consume(args, false);
      else if (args.mode == "latency" || args.mode == "latency-tuned") {
        result = Latency(args, *producer);
      } else if (args.mode == "idle") {
        result = Idle(args);
      }
      else throw WindowError{"unknown mode " + args.mode};
      answer = ToJson(result);
    } catch (const WindowError& error) {
      answer = "{\"error\": \"" + Escaped(error.what) + "\"}";
    }
    std::printf("%s\n", answer.c_str());
    std::fflush(stdout);
  }
  return 0;
}
