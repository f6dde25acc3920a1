// The public Consumer: checks the settings, owns the service lease (taken and given
// back on application threads) and forwards to Consumer::Impl.
#include "tubemq/consumer.h"

#include <string>
#include <string_view>
#include <utility>

#include "consumer/consumer_impl.h"
#include "service/client_settings.h"
#include "tubemq/names.h"

namespace tubemq {
namespace {

Status Invalid(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

// The name rules are tubemq/names.h's, in the words the Python facade uses too.
Status ValidateOptions(const ConsumerOptions& options) {
  if (std::string problem = names::GroupProblem(options.group); !problem.empty()) {
    return Invalid("invalid group name '" + options.group + "': " + problem);
  }
  if (options.topics.empty()) return Invalid("at least one topic is needed");
  for (const auto& [topic, filters] : options.topics) {
    if (std::string problem = names::TopicProblem(topic); !problem.empty()) {
      return Invalid("invalid topic name '" + topic + "': " + problem);
    }
    if (filters.size() > names::kMaxFilterItems) {
      return Invalid("'" + topic + "' has more than " + std::to_string(names::kMaxFilterItems) +
                     " filter items");
    }
    for (const auto& item : filters) {
      if (std::string problem = names::FilterItemProblem(item); !problem.empty()) {
        return Invalid("filter item '" + item + "' of '" + topic + "': " + problem);
      }
    }
  }
  if (options.assigned && options.source_count > 0 &&
      (options.node_id < 0 || options.node_id >= options.source_count)) {
    return Status(ErrorCode::kInvalidArgument,
                  "node_id " + std::to_string(options.node_id) + " must be in [0, source_count " +
                      std::to_string(options.source_count) + ")");
  }
  if (!options.session_key.empty()) {
    if (options.assigned) {
      return Status(ErrorCode::kInvalidArgument,
                    "a session key (bound consume) is for server-balanced consumers");
    }
    if (std::string problem = names::SessionKeyProblem(options.session_key);
        !problem.empty()) {
      return Invalid("session key '" + options.session_key + "': " + problem);
    }
    if (options.source_count < 1) {
      return Status(ErrorCode::kInvalidArgument,
                    "bound consume needs source_count >= 1 (the number of members)");
    }
  }
  for (const auto& [key, offset] : options.bound_offsets) {
    std::string_view topic;
    if (!names::SplitPartitionKey(key, topic) || offset < 0 ||
        options.topics.count(std::string(topic)) == 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "bound offset '" + key + "=" + std::to_string(offset) + "' needs a key '" +
                        names::kPartitionKeyForm +
                        "' of a subscribed topic and an offset >= 0");
    }
  }
  if (options.source_count < 0) {
    return Status(ErrorCode::kInvalidArgument, "source_count must not be negative");
  }
  return Status::OK();
}

}  // namespace

struct Consumer::Shell : service::ClientShell {
  Shell() : ClientShell("consumer") {}
};

Consumer::Consumer(ClientConfig config, ConsumerOptions options)
    : shell_(std::make_unique<Shell>()) {
  std::vector<meta::Endpoint> masters;
  std::shared_ptr<net::TlsContext> tls;
  if (!shell_->Admit(config, masters, tls, [&options] { return ValidateOptions(options); })) {
    return;
  }
  impl_ = std::make_shared<Impl>(std::move(config), std::move(options), std::move(masters),
                                 std::move(tls), shell_->lease->engine_ptr());
}

Consumer::~Consumer() {
  shell_->Retire(impl_, [this] { return Close(); });
}

Status Consumer::Usable() const { return shell_->Usable(); }

std::future<Status> Consumer::Start() {
  return service::CallAsFuture(Usable(), [this](auto done) { impl_->Start(std::move(done)); });
}

Status Consumer::Poll(std::chrono::milliseconds wait, ReceivedBatch& batch) {
  Status usable = Usable();
  return usable.ok() ? impl_->Poll(wait, batch) : usable;
}

Status Consumer::Confirm(const std::string& confirm_context, bool consumed, CommitRoute route) {
  Status usable = Usable();
  return usable.ok() ? impl_->Confirm(confirm_context, consumed, route) : usable;
}

Status Consumer::QueryPartitions(bool refresh, std::vector<PartitionMeta>& out) {
  Status usable = Usable();
  return usable.ok() ? impl_->QueryPartitions(refresh, out) : usable;
}

Status Consumer::Assign(const std::string& partition_key, int64_t offset) {
  Status usable = Usable();
  return usable.ok() ? impl_->Assign(partition_key, offset) : usable;
}

Status Consumer::Unassign(const std::string& partition_key, bool commit) {
  Status usable = Usable();
  return usable.ok() ? impl_->Unassign(partition_key, commit) : usable;
}

bool Consumer::Pause(const std::string& partition_key) {
  return impl_ && impl_->cache().Pause(partition_key);
}

bool Consumer::Resume(const std::string& partition_key) {
  return impl_ && impl_->cache().Resume(partition_key);
}

std::vector<std::string> Consumer::Paused() const {
  return impl_ ? impl_->cache().Paused() : std::vector<std::string>{};
}

std::map<std::string, std::pair<int64_t, int64_t>> Consumer::Offsets() const {
  return impl_ ? impl_->Offsets() : std::map<std::string, std::pair<int64_t, int64_t>>{};
}

Consumer::Counters Consumer::counters() const {
  return impl_ ? impl_->counters() : Counters{};
}

std::optional<bool> Consumer::BoundOffsetsApplied() const {
  return impl_ ? impl_->BoundOffsetsApplied() : std::nullopt;
}

std::vector<std::string> Consumer::HeldPartitions() const {
  return impl_ ? impl_->HeldPartitions() : std::vector<std::string>{};
}

std::future<Status> Consumer::Close() {
  return service::CloseAsFuture(Usable(), [this](auto done) { impl_->Close(std::move(done)); });
}

void Consumer::ReleaseService() { shell_->Release(); }

const std::string& Consumer::client_id() const {
  static const std::string kNone;
  return impl_ ? impl_->client_id() : kNone;
}

}  // namespace tubemq
