#include "kiln/server/tls.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

#include "kiln/server/bounded_http.h"

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#error "kiln serve needs cpp-httplib with CPPHTTPLIB_OPENSSL_SUPPORT (pkg-config cpp-httplib)"
#endif

namespace kiln::server {
namespace {

// The last OpenSSL error as text ("no start line", "bad decrypt"), or `fallback`.
std::string openssl_reason(const char* fallback) {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : fallback;
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

Status check_tls_files(const config::ServeTls& tls) {
  ERR_clear_error();
  File cert_file(std::fopen(tls.cert.c_str(), "rb"));
  if (!cert_file)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("serve.tls.cert: cannot read {}", tls.cert.string()),
                      tls.cert_where);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_X509(cert_file.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("serve.tls.cert: {} holds no PEM certificate ({})",
                                  tls.cert.string(), openssl_reason("unreadable")),
                      tls.cert_where);
  File key_file(std::fopen(tls.key.c_str(), "rb"));
  if (!key_file)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("serve.tls.key: cannot read {}", tls.key.string()),
                      tls.key_where);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_PrivateKey(key_file.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  if (!key)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("serve.tls.key: {} holds no unencrypted PEM private key ({})",
                                  tls.key.string(), openssl_reason("unreadable")),
                      tls.key_where);
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return make_error(ErrorCode::invalid_input,
                      fmt::format("serve.tls.key: {} is not the key of the certificate {}",
                                  tls.key.string(), tls.cert.string()),
                      tls.key_where);
  }
  return {};
}

Result<std::unique_ptr<httplib::Server>> make_http_server(const config::ServeConfig& serve) {
  if (!serve.tls) return std::make_unique<BoundedHttpServer>();
  KILN_TRY_VOID(check_tls_files(*serve.tls));
  auto server =
      std::make_unique<BoundedHttpsServer>(serve.tls->cert.c_str(), serve.tls->key.c_str());
  if (!server->is_valid())
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("serve.tls: OpenSSL refused {} and {} ({})", serve.tls->cert.string(),
                    serve.tls->key.string(), openssl_reason("no reason given")),
        serve.tls->cert_where);
  return std::unique_ptr<httplib::Server>(std::move(server));
}

}  // namespace kiln::server
