#include "meta/broker_info.h"

#include "meta/text.h"

namespace tubemq::meta {

Status ParseBrokerInfo(std::string_view text, bool tls, BrokerInfo& out) {
  const std::vector<std::string_view> parts = Split(text, ':');
  if (parts.size() != 3) {
    return Status(ErrorCode::kProtocolError,
                  "broker info '" + std::string(text) + "' is not brokerId:host:port");
  }
  int64_t id = 0;
  if (!ParseInt(Trim(parts[0]), id) || id < 0 || id > INT32_MAX) {
    return Status(ErrorCode::kProtocolError, "bad broker id in '" + std::string(text) + "'");
  }
  const std::string_view host = Trim(parts[1]);
  if (host.empty()) {
    return Status(ErrorCode::kProtocolError, "blank broker host in '" + std::string(text) + "'");
  }
  const std::string_view port_text = Trim(parts[2]);
  int64_t port = tls ? kDefaultBrokerTlsPort : kDefaultBrokerPort;
  if (!port_text.empty() && (!ParseInt(port_text, port) || port < 1 || port > 65535)) {
    return Status(ErrorCode::kProtocolError, "bad broker port in '" + std::string(text) + "'");
  }
  out.id = static_cast<int32_t>(id);
  out.endpoint.host = std::string(host);
  out.endpoint.port = static_cast<uint16_t>(port);
  return Status::OK();
}

BrokerMap ParseBrokerList(const std::vector<std::string>& items, bool tls, Status* first_error) {
  BrokerMap brokers;
  for (const std::string& item : items) {
    BrokerInfo broker;
    Status status = ParseBrokerInfo(item, tls, broker);
    if (status.ok()) {
      brokers[broker.id] = std::move(broker);
    } else if (first_error && first_error->ok()) {
      *first_error = status;
    }
  }
  return brokers;
}

}  // namespace tubemq::meta
