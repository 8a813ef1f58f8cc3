#pragma once
// HTTPS for `kiln serve` (serve.tls in kiln.yml): the certificate chain and private key are
// checked with OpenSSL before the server starts, so a missing, unreadable or mismatched file is
// a configuration error at the key's FILE:LINE:COL (exit code 2) rather than a server that
// listens and fails every handshake.

#include <memory>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"

namespace httplib {
class Server;
}

namespace kiln::server {

// Reads both PEM files and checks that the key belongs to the certificate. invalid_input at
// serve.tls.cert / serve.tls.key otherwise.
Status check_tls_files(const config::ServeTls& tls);

// The HTTP server, every request bounded (bounded_http.h): HTTPS on the checked files when
// `serve.tls` is set, else plain HTTP.
Result<std::unique_ptr<httplib::Server>> make_http_server(const config::ServeConfig& serve);

}  // namespace kiln::server
