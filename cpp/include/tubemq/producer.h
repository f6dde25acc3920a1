// Producer: publishes messages to TubeMQ topics (behaviour.md §2).
//
// Blocking operations return a std::future so that callers decide how to wait (the
// Python bindings wait with the GIL released and stay interruptible). Futures are
// completed on I/O threads; nothing here calls back into application code.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tubemq/client_config.h"
#include "tubemq/message.h"
#include "tubemq/status.h"

namespace tubemq {

struct PartitionInfo {
  std::string key;  // "<brokerId>:<topic>:<partitionId>"
  std::string topic;
  int32_t partition_id = 0;
  int32_t broker_id = 0;
  std::string broker_address;  // "host:port"
};

// What only a producer needs besides the common client settings.
struct ProducerOptions {
  int32_t max_in_flight = 10000;  // sends awaiting their broker reply, at most
  // Extra attempts, on another partition where possible, after failures that prove the
  // broker did not store the message (refused connection, 503, 419, 500, 403, server
  // exception). A timeout or a connection lost after the request went out is never
  // retried: the broker may have stored the message, and a retry could store it twice.
  int32_t send_retries = 2;
};

class Producer {
 public:
  // Runs on an I/O thread, exactly once per send; must not block.
  using SendCallback = std::function<void(const Status&, SendResult&&)>;

  // Validates the config; does not connect.
  explicit Producer(ClientConfig config, ProducerOptions options = {});
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  // Registers with the master (retrying over the master list), then heartbeats
  // periodically until Close().
  std::future<Status> Start();

  // Adds topics to the published set and heartbeats at once; resolves when the master
  // has answered, with an error naming any topic that has no writable partition.
  std::future<Status> Publish(std::vector<std::string> topics);

  // Writable partitions of a published topic, as of the last heartbeat.
  std::vector<PartitionInfo> Partitions(const std::string& topic) const;
  std::vector<std::string> PublishedTopics() const;

  // Takes a place in the in-flight window, waiting up to `wait` for one to free up;
  // false if none did. Every SendAsync() must hold one; its completion gives it back.
  bool AcquireSendSlot(std::chrono::milliseconds wait);

  // Sends a message; `callback` learns the outcome exactly once. Local checks (closed,
  // blank topic, empty body, bad attributes, a topic name against the rule, no
  // partition, too large) fail through the callback without any network traffic. A
  // topic not published yet is published first (as Publish() does), the send waiting.
  void SendAsync(OutgoingMessage message, SendCallback callback);

  // Sends awaiting their reply.
  int32_t InFlight() const;

  // Refuses new sends, waits (up to the RPC timeout) for those in flight, stops
  // heartbeats and unregisters from the master. Resolves when the master has answered
  // or the RPC deadline passed. Idempotent.
  std::future<Status> Close();

  // Gives the I/O service back (after Close(), on an application thread).
  void ReleaseService();

  const std::string& client_id() const;
  // Status of the construction (kInvalidArgument for a bad config, kForkedClient when
  // used after fork() in the child) - checked by every call.
  Status Usable() const;

  struct Counters {
    uint64_t heartbeats_ok = 0;
    uint64_t heartbeats_failed = 0;
    uint64_t registrations = 0;
    uint64_t sent_ok = 0;
    uint64_t sent_failed = 0;
    uint64_t retries = 0;
    uint64_t brokers_shielded = 0;  // brokers sends avoid right now (a gauge)
    uint64_t reconnects = 0;        // connections re-opened after a lost one (master, brokers)
    uint64_t master_switches = 0;   // calls answered by another master than the call before
    uint64_t master_standby_answers = 0;  // "not the active master" answers met
  };
  Counters counters() const;

 class Impl;  // public so that the implementation's helpers can name it

 private:
  struct Shell;  // what lives on the application's side: lease, pid, config status
  std::unique_ptr<Shell> shell_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tubemq
