// Producer: publishes messages to TubeMQ topics (behaviour.md §2).
//
// Blocking operations return a std::future so that callers decide how to wait (the
// Python bindings wait with the GIL released and stay interruptible). Futures are
// completed on I/O threads; nothing here calls back into application code.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tubemq/client_config.h"
#include "tubemq/status.h"

namespace tubemq {

struct PartitionInfo {
  std::string key;  // "<brokerId>:<topic>:<partitionId>"
  std::string topic;
  int32_t partition_id = 0;
  int32_t broker_id = 0;
  std::string broker_address;  // "host:port"
};

class Producer {
 public:
  explicit Producer(ClientConfig config);  // validates the config; does not connect
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

  // Stops heartbeats and unregisters from the master. Resolves when the master has
  // answered or the RPC deadline passed. Idempotent.
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
  };
  Counters counters() const;

 class Impl;  // public so that the implementation's helpers can name it

 private:
  struct Shell;  // what lives on the application's side: lease, pid, config status
  std::unique_ptr<Shell> shell_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tubemq
