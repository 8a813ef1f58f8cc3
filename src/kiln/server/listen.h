#pragma once
// How kiln serve takes its port: alone. cpp-httplib's default socket options set SO_REUSEPORT,
// which let a second `kiln serve` bind the same port and the kernel split the connections
// between the two stores (issue 25). exclusive_socket_options sets SO_REUSEADDR only: a restart
// still binds over the old server's TIME_WAIT connections, a live listener is refused.

#include <string>

#include "kiln/core/result.h"

namespace kiln::server {

// For httplib::Server::set_socket_options.
void exclusive_socket_options(int sock);

// Why binding HOST:PORT failed, found by binding it again the same way: invalid_input
// "port P on HOST is in use by another process" for EADDRINUSE (exit 2), else io_error with
// the system's reason.
Error bind_failure(const std::string& host, int port);

}  // namespace kiln::server
