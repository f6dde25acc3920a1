#include "meta/endpoint.h"

#include <algorithm>

#include "meta/text.h"

namespace tubemq::meta {
namespace {


// In the words tubemq.ConfigError has always used for a bad `master` entry (the Python
// facade passes these messages on).
Status NotHostPort(std::string_view text) {
  return Status(ErrorCode::kInvalidArgument, "'" + std::string(text) + "' is not host:port");
}
Status NoValidPort(std::string_view text) {
  return Status(ErrorCode::kInvalidArgument,
                "'" + std::string(text) + "' has no valid port (1..65535)");
}

}  // namespace

Status ParseEndpoint(std::string_view text, Endpoint& out) {
  text = Trim(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return NotHostPort(text);
  }
  const std::string_view host = Trim(text.substr(0, colon));
  const std::string_view port = Trim(text.substr(colon + 1));
  if (host.empty()) return NotHostPort(text);
  int64_t value = 0;
  if (!ParseInt(port, value) || value < 1 || value > 65535) return NoValidPort(text);
  out.host = std::string(host);
  out.port = static_cast<uint16_t>(value);
  return Status::OK();
}

Status ParseEndpointList(std::string_view text, std::vector<Endpoint>& out) {
  out.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = Trim(text.substr(start, comma - start));
    if (!item.empty()) {
      Endpoint endpoint;
      Status status = ParseEndpoint(item, endpoint);
      if (!status.ok()) return status;
      if (std::find(out.begin(), out.end(), endpoint) == out.end()) out.push_back(endpoint);
    }
    start = comma + 1;
  }
  if (out.empty()) {
    return Status(ErrorCode::kInvalidArgument, "no master address given");
  }
  return Status::OK();
}

}  // namespace tubemq::meta
