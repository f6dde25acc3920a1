// Client identity: the local IPv4 address a client reports, and the unique client id
// the master and brokers know it by (protocol.md §5.14). Ids use only [A-Za-z0-9_.-],
// because they are embedded in strings that use '#', '@', ':' and ',' as separators.
#pragma once

#include <string>

namespace tubemq::meta {

// The first non-loopback IPv4 address of an interface that is up; "127.0.0.1" if none.
std::string LocalIPv4();

// "<ip>-<pid>-<epochMillis>-<counter>-py-<version>" for producers;
// "<group>_<ip>-<pid>-<epochMillis>-<counter>-py-<version>" for consumers.
std::string MakeClientId(const std::string& group, const std::string& local_ip);

}  // namespace tubemq::meta
