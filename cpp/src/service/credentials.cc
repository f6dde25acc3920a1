#include "service/credentials.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <chrono>
#include <random>

#include "MasterService.pb.h"

namespace tubemq::service {
namespace {

std::string Base64(const unsigned char* data, size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                                      static_cast<int>(size));
  out.resize(static_cast<size_t>(written));
  return out;
}

// Java's URLEncoder: letters, digits and ".-*_" stay, space becomes '+', the rest %XX.
std::string UrlEncode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '.' || c == '-' || c == '*' || c == '_') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int32_t RandomNonce() {
  thread_local std::mt19937 random(std::random_device{}());
  return std::uniform_int_distribution<int32_t>(0, 0x7FFFFFFE)(random);
}

}  // namespace

std::string AuthSignature(const std::string& user, const std::string& password,
                          int64_t timestamp_ms, int32_t nonce) {
  const std::string message = user + std::to_string(timestamp_ms) + std::to_string(nonce);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha1(), password.data(), static_cast<int>(password.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return UrlEncode(Base64(mac, mac_size));
}

void Credentials::Sign(pb::MasterCertificateInfo& certificate) const {
  const int64_t now = NowMs();
  const int32_t nonce = RandomNonce();
  auto* info = certificate.mutable_authinfo();
  info->set_username(user_);
  info->set_timestamp(now);
  info->set_nonce(nonce);
  info->set_othparams("");
  info->set_signature(AuthSignature(user_, password_, now, nonce));
}

std::string Credentials::BrokerToken() const {
  const int64_t now = NowMs();
  const int32_t nonce = RandomNonce();
  return user_ + " " + std::to_string(now) + " " + std::to_string(nonce) + " " +
         AuthSignature(user_, password_, now, nonce);
}

}  // namespace tubemq::service
