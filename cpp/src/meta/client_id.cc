#include "meta/client_id.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "tubemq/version.h"

namespace tubemq::meta {

std::string LocalIPv4() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found = "127.0.0.1";
  for (ifaddrs* item = list; item != nullptr; item = item->ifa_next) {
    if (item->ifa_addr == nullptr || item->ifa_addr->sa_family != AF_INET) continue;
    if ((item->ifa_flags & IFF_UP) == 0 || (item->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(item->ifa_addr);
    if (inet_ntop(AF_INET, &address->sin_addr, text, sizeof text) != nullptr) {
      found = text;
      break;
    }
  }
  freeifaddrs(list);
  return found;
}

std::string MakeClientId(const std::string& group, const std::string& local_ip) {
  // The counter tells apart clients created in the same millisecond by one process.
  static std::atomic<uint64_t> counter{0};
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string id = group.empty() ? std::string() : group + "_";
  id += local_ip + "-" + std::to_string(getpid()) + "-" + std::to_string(millis) + "-" +
        std::to_string(++counter) + "-py-" + kVersion;
  return id;
}

}  // namespace tubemq::meta
