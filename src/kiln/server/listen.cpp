// exclusive_socket_options and bind_failure (listen.h).

#include "kiln/server/listen.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kiln::server {

void exclusive_socket_options(int sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

Error bind_failure(const std::string& host, int port) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0)
    return {ErrorCode::invalid_input,
            fmt::format("cannot listen on {}:{}: {}", host, port, gai_strerror(rc)),
            {}};
  int error = 0;
  for (addrinfo* a = found; a != nullptr && error != EADDRINUSE; a = a->ai_next) {
    int sock = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (sock < 0) {
      error = errno;
      continue;
    }
    exclusive_socket_options(sock);
    error = bind(sock, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    close(sock);
  }
  freeaddrinfo(found);
  if (error == EADDRINUSE)
    return {ErrorCode::invalid_input,
            fmt::format("cannot listen on {}:{}: port {} is in use by another process (kiln serve "
                        "does not share a port; stop the other server or choose another listen:)",
                        host, port, port),
            {}};
  return {ErrorCode::io_error,
          fmt::format("cannot listen on {}:{}: {}", host, port,
                      error != 0 ? std::strerror(error) : "the HTTP server refused the address"),
          {}};
}

}  // namespace kiln::server
