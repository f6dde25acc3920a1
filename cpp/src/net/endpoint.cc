#include "net/endpoint.h"

#include <algorithm>

#include "meta/text.h"

namespace tubemq::net {
namespace {

using meta::Trim;

Status Invalid(std::string_view text, const char* why) {
  return Status(ErrorCode::kInvalidArgument,
                "invalid address '" + std::string(text) + "': " + why + " (expected host:port)");
}

}  // namespace

Status ParseEndpoint(std::string_view text, Endpoint& out) {
  text = Trim(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return Invalid(text, "needs exactly one ':'");
  }
  const std::string_view host = Trim(text.substr(0, colon));
  const std::string_view port = Trim(text.substr(colon + 1));
  if (host.empty()) return Invalid(text, "the host is blank");
  int64_t value = 0;
  if (!meta::ParseInt(port, value)) return Invalid(text, "the port is not a number");
  if (value < 1 || value > 65535) return Invalid(text, "the port is out of range 1..65535");
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
    return Status(ErrorCode::kInvalidArgument, "the master address list is empty");
  }
  return Status::OK();
}

}  // namespace tubemq::net
