// The public Producer: owns the service lease (taken and given back on application
// threads) and forwards to Producer::Impl, whose lifetime callbacks may extend.
#include "tubemq/producer.h"

#include "producer/producer_impl.h"
#include "service/client_settings.h"

namespace tubemq {

struct Producer::Shell : service::ClientShell {
  Shell() : ClientShell("producer") {}
};

Producer::Producer(ClientConfig config, ProducerOptions options)
    : shell_(std::make_unique<Shell>()) {
  std::vector<meta::Endpoint> masters;
  std::shared_ptr<net::TlsContext> tls;
  auto check_options = [&options] {
    if (options.max_in_flight >= 1 && options.send_retries >= 0) return Status::OK();
    return Status(ErrorCode::kInvalidArgument,
                  "max_in_flight must be at least 1 and send_retries at least 0");
  };
  if (!shell_->Admit(config, masters, tls, check_options)) return;
  impl_ = std::make_shared<Impl>(std::move(config), options, std::move(masters), std::move(tls),
                                 shell_->lease->engine_ptr());
}

Producer::~Producer() {
  shell_->Retire(impl_, [this] { return Close(); });
}

Status Producer::Usable() const { return shell_->Usable(); }

std::future<Status> Producer::Start() {
  return service::CallAsFuture(Usable(), [this](auto done) { impl_->Start(std::move(done)); });
}

std::future<Status> Producer::Publish(std::vector<std::string> topics) {
  return service::CallAsFuture(Usable(), [this, &topics](auto done) {
    impl_->Publish(std::move(topics), std::move(done));
  });
}

bool Producer::AcquireSendSlot(std::chrono::milliseconds wait) {
  // An unusable producer takes no slot; SendAsync() then fails at once.
  return !Usable().ok() || impl_->AcquireSendSlot(wait);
}

void Producer::SendAsync(OutgoingMessage message, SendCallback callback) {
  Status usable = Usable();
  if (!usable.ok()) {
    callback(usable, SendResult{});
    return;
  }
  impl_->Send(std::move(message), std::move(callback));
}

int32_t Producer::InFlight() const { return impl_ ? impl_->InFlight() : 0; }

std::vector<PartitionInfo> Producer::Partitions(const std::string& topic) const {
  return impl_ ? impl_->Partitions(topic) : std::vector<PartitionInfo>{};
}

std::vector<std::string> Producer::PublishedTopics() const {
  return impl_ ? impl_->PublishedTopics() : std::vector<std::string>{};
}

std::future<Status> Producer::Close() {
  return service::CloseAsFuture(Usable(), [this](auto done) { impl_->Close(std::move(done)); });
}

void Producer::ReleaseService() { shell_->Release(); }

const std::string& Producer::client_id() const {
  static const std::string kNone;
  return impl_ ? impl_->client_id() : kNone;
}

Producer::Counters Producer::counters() const { return impl_ ? impl_->counters() : Counters{}; }

}  // namespace tubemq
