#include "net/tls_context.h"

namespace tubemq::net {

TlsContext::TlsContext(bool verify_hostname, std::string pool_key)
    : context_(asio::ssl::context::tls_client),
      verify_hostname_(verify_hostname),
      pool_key_(std::move(pool_key)) {}

Status TlsContext::FromConfig(const ClientConfig& config, std::shared_ptr<TlsContext>& out) {
  out.reset();
  if (!config.tls_enable) return Status::OK();
  auto tls = std::make_shared<TlsContext>(
      config.tls_verify_hostname,
      "tls:" + std::string(config.tls_verify_hostname ? "host:" : "any:") + config.tls_ca_file +
          ":" + config.tls_cert_file);
  asio::error_code error;
  tls->context_.set_options(asio::ssl::context::default_workarounds |
                                asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                                asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1,
                            error);
  tls->context_.set_verify_mode(asio::ssl::verify_peer, error);
  if (config.tls_ca_file.empty()) {
    tls->context_.set_default_verify_paths(error);
  } else {
    tls->context_.load_verify_file(config.tls_ca_file, error);
  }
  if (error) {
    return Status(ErrorCode::kInvalidArgument,
                  "tls_ca_file: cannot load CA certificates from '" + config.tls_ca_file +
                      "': " + error.message());
  }
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return Status(ErrorCode::kInvalidArgument,
                  "tls_cert_file and tls_key_file go together: give both or neither");
  }
  if (!config.tls_cert_file.empty()) {
    tls->context_.use_certificate_chain_file(config.tls_cert_file, error);
    if (error) {
      return Status(ErrorCode::kInvalidArgument, "tls_cert_file: cannot load '" +
                                                     config.tls_cert_file + "': " + error.message());
    }
    tls->context_.use_private_key_file(config.tls_key_file, asio::ssl::context::pem, error);
    if (error) {
      return Status(ErrorCode::kInvalidArgument,
                    "tls_key_file: cannot load '" + config.tls_key_file +
                        "' (or it does not match tls_cert_file): " + error.message());
    }
  }
  out = std::move(tls);
  return Status::OK();
}

}  // namespace tubemq::net
