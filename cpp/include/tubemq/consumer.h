// Consumer: the server-balanced consumer (behaviour.md §3): the master assigns the
// partitions of a group's topics to its members; the application polls batches and
// confirms them.
//
// Poll() and Confirm() block the calling thread (the bindings call them with the GIL
// released, in short slices). Everything else runs on the I/O threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tubemq/client_config.h"
#include "tubemq/status.h"

namespace tubemq {

enum class ConsumePosition {
  kEarliest,   // a new group starts at the oldest retained message
  kLatest,     // a new group starts at the end; a known group resumes
  kMaxAlways,  // every start skips to the end
};

// How Confirm(consumed=true) takes a commit to the broker.
enum class CommitRoute {
  kAsConfigured,  // as ConsumerOptions::commit_on_next_fetch says
  kNextFetch,     // on the partition's next fetch (or its release); returns at once
  kRequest,       // a CommitOffset request of its own; returns with the broker's answer
};

struct ConsumerOptions {
  std::string group;
  // Topic -> msgType filter items (empty: every message of the topic).
  std::map<std::string, std::set<std::string>> topics;
  ConsumePosition position = ConsumePosition::kLatest;
  int64_t msg_not_found_wait_ms = 400;  // rest of a partition that had no new data
  int64_t confirm_timeout_ms = 60000;   // an unconfirmed batch is redelivered after this
  // Confirm(consumed=true) sends no CommitOffset: the partition's next fetch (or its
  // release) tells the broker, one round trip per batch instead of two (behaviour.md
  // §3.8.2). The commit reaches the broker later, so a crash in between means the batch
  // comes again: still at least once. The default, as a Kafka commit is asynchronous by
  // default; CommitRoute::kRequest asks for a commit the broker has answered.
  bool commit_on_next_fetch = true;
  // Fetching ahead: while the application works on a batch, the partitions not in its
  // hands are fetched already, and their batches wait for the next polls, up to this
  // many bytes (0: one fetch at a time, started by a poll). One batch per partition
  // between two confirms, as the protocol has it.
  int64_t fetch_ahead_bytes = int64_t{16} << 20;

  // Assigned partitions (Python's AssignedConsumer; TubeMQ calls it client-balanced,
  // behaviour.md §5): the application, not the master, chooses the partitions
  // (Assign/Unassign) and their start offsets.
  bool assigned = false;
  int32_t source_count = 0;  // members that split the partitions; 0 declares none
  int32_t node_id = 0;       // this member's index in [0, source_count)

  // Bound consume (server-balanced, behaviour.md §3.10): a non-empty session key makes
  // the group start from `bound_offsets` (partition key -> index offset) once all
  // `source_count` members joined. Where several members name a partition, the bigger
  // offset wins with `select_big`, else the smaller.
  std::string session_key;
  bool select_big = true;
  std::map<std::string, int64_t> bound_offsets;
};

// A partition as a client-balanced consumer sees it in the topic metadata.
struct PartitionMeta {
  std::string key;  // "<brokerId>:<topic>:<partitionId>"
  std::string topic;
  int32_t broker_id = 0;
  int32_t partition_id = 0;
  std::string broker;  // "host:port"
  bool subscribable = false;
};

// Views into the batch's bytes (ReceivedBatch::owner keeps them alive): a fetch copies
// nothing per message and parses its attribute string only as far as msgType and
// msgTime; the other attributes are parsed when asked for.
struct ReceivedMessage {
  int64_t message_id = 0;
  std::string_view body;
  std::string_view msg_type;   // "" when the message has none
  std::string_view msg_time;   // "" unless the message has a 12-digit one
  std::string_view attribute;  // the whole attribute string, as the producer sent it
  // The attribute items other than msgType and msgTime, in order, parsed from
  // `attribute` on each call (items without '=' or with a blank key are left out).
  std::vector<std::pair<std::string_view, std::string_view>> Properties() const;
};

struct ReceivedBatch {
  std::shared_ptr<const void> owner;  // keeps the bytes the views point into alive
  std::string topic;
  std::string partition_key;
  std::string confirm_context;  // opaque; give it back to Confirm()
  int64_t offset = -1;          // the partition's committed offset before this batch
  int64_t max_offset = -1;
  std::vector<ReceivedMessage> messages;
};

class Consumer {
 public:
  Consumer(ClientConfig config, ConsumerOptions options);
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  std::future<Status> Start();

  // Waits up to `wait` for a partition to be ready, then fetches one batch from it.
  // OK with a batch (possibly empty after local filtering); 404/406/407/408 mean
  // "nothing now" and come with no batch.
  Status Poll(std::chrono::milliseconds wait, ReceivedBatch& batch);

  // Commits (consumed) or rolls back (not consumed) the batch of `confirm_context`.
  // `route` applies to a commit; a rollback is always a request answered by the broker.
  Status Confirm(const std::string& confirm_context, bool consumed,
                 CommitRoute route = CommitRoute::kAsConfigured);

  // Stops (resumes) fetching from a held partition; it stays assigned to this member.
  // False for keys not held.
  bool Pause(const std::string& partition_key);
  bool Resume(const std::string& partition_key);
  std::vector<std::string> Paused() const;

  // Client-balanced mode only (kInvalidArgument otherwise). They block the caller for
  // at most a few RPC timeouts.
  // The partitions of the subscribed topics; the master is asked again only when the
  // cached answer is older than 10 s, or always with `refresh`.
  Status QueryPartitions(bool refresh, std::vector<PartitionMeta>& out);
  // Takes a partition at its broker, starting at `offset` (an index position, clamped
  // by the broker), or at the group's committed offset when `offset` < 0. Taking a held
  // partition again moves it to `offset`; its batch in flight is dropped.
  Status Assign(const std::string& partition_key, int64_t offset);
  // Gives a held partition back, committing (or rolling back) its last batch.
  Status Unassign(const std::string& partition_key, bool commit);

  // Counts since the consumer was made, for metrics.
  struct Counters {
    uint64_t registrations = 0;
    uint64_t heartbeats_ok = 0;
    uint64_t heartbeats_failed = 0;
    uint64_t rebalance_events = 0;  // events processed (each CONNECT or DISCONNECT)
    uint64_t fetches = 0;           // fetches the broker answered
    uint64_t fetch_errors = 0;      // fetches failed in transport or with an error code
    uint64_t rests_cut_short = 0;   // short rests a sibling's reply ended (StoreWatch)
    uint64_t batches = 0;           // batches handed to the application
    uint64_t messages = 0;
    uint64_t bytes = 0;             // message body bytes
    uint64_t commits = 0;           // confirms the broker acknowledged
    uint64_t commit_failures = 0;
    uint64_t reconnects = 0;  // connections re-opened after a lost one (master, brokers)
    uint64_t master_switches = 0;         // calls answered by another master than the call before
    uint64_t master_standby_answers = 0;  // "not the active master" answers met
  };
  Counters counters() const;

  // Partition key -> (committed offset, max offset) of every held partition.
  std::map<std::string, std::pair<int64_t, int64_t>> Offsets() const;
  std::vector<std::string> HeldPartitions() const;
  // Bound consume: whether this member's bound_offsets were applied (it joined before the
  // master's first allocation of the session), or not (the session was allocated
  // already: its partitions resume at the group's commits). Empty before the member's
  // first CONNECT, and for a member without a session key.
  std::optional<bool> BoundOffsetsApplied() const;

  // Releases every partition (uncommitted batches roll back) and leaves the group.
  std::future<Status> Close();
  void ReleaseService();

  const std::string& client_id() const;
  Status Usable() const;

  class Impl;

 private:
  struct Shell;
  std::unique_ptr<Shell> shell_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tubemq
