// Username/password authentication (protocol.md §8): the signed AuthenticateInfo that
// goes to the master, and the credential string brokers accept as an auth token.
#pragma once

#include <cstdint>
#include <string>

namespace tubemq::pb {
class MasterCertificateInfo;
}  // namespace tubemq::pb

namespace tubemq::service {

// URL-encoded Base64 of HMAC-SHA1(key = password, message = user ‖ timestamp ‖ nonce).
std::string AuthSignature(const std::string& user, const std::string& password,
                          int64_t timestamp_ms, int32_t nonce);

class Credentials {
 public:
  Credentials() = default;
  Credentials(std::string user, std::string password)
      : user_(std::move(user)), password_(std::move(password)) {}

  bool enabled() const { return !user_.empty(); }

  // Fresh credentials (current time, random nonce) into `certificate.authInfo`.
  void Sign(pb::MasterCertificateInfo& certificate) const;

  // "<user> <timestamp> <nonce> <signature>", what a broker takes as an auth token.
  std::string BrokerToken() const;

 private:
  std::string user_;
  std::string password_;
};

}  // namespace tubemq::service
