#include "kiln/server/bounded_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kiln/server/reply.h"

namespace kiln::server {
namespace {

using Clock = std::chrono::steady_clock;
using httplib::Request;
using httplib::Response;

// poll(2) on one descriptor: its revents, 0 on timeout, -1 on error.
int poll_one(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd entry{fd, events, 0};
  const auto until = Clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    int n = ::poll(&entry, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (n < 0 && errno == EINTR) continue;
    return n <= 0 ? n : entry.revents;
  }
}

std::string address_text(const sockaddr_storage& address, int* port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    if (port) *port = ntohs(in.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    if (port) *port = ntohs(in6.sin6_port);
  }
  return text;
}

std::string reason_of(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "no such endpoint";
    case 405:
      return "method not allowed";
    case 408:
      return "the request was not sent in time";
    case 413:
      return "the request body is over the limit";
    case 414:
      return "the request line is too long";
    case 429:
      return "too many connections from this address";
    case 431:
      return "the request headers are over the limit";
    default:
      return "error";
  }
}

// After a refusal: lets a client still sending read its answer (closing with unread data
// would reset the connection first), for at most a second and 4 MiB, so a fast client is not
// drained of its whole body.
void linger(socket_t sock, const HttpLimits& limits) {
  ::shutdown(sock, SHUT_WR);
  char discard[64 * 1024];
  const auto until = Clock::now() + std::min(limits.read_timeout, std::chrono::milliseconds(1000));
  std::size_t left = 4 * 1024 * 1024;
  while (Clock::now() < until && left > 0) {
    if (poll_one(sock, POLLIN, std::chrono::milliseconds(100)) <= 0) break;
    ssize_t n = ::recv(sock, discard, std::min(sizeof discard, left), 0);
    if (n <= 0) break;
    left -= static_cast<std::size_t>(n);
  }
}

// One client connection as httplib's Stream: buffered reads that count the request's header
// and body bytes and keep its deadlines; TLS through OpenSSL on the non-blocking socket.
class Connection final : public httplib::Stream {
 public:
  Connection(socket_t fd, SSL* ssl, const HttpLimits& limits)
      : fd_(fd), ssl_(ssl), limits_(limits) {}

  bool is_readable() const override {
    return begin_ < end_ || (ssl_ && SSL_pending(ssl_) > 0) ||
           poll_one(fd_, POLLIN, limits_.read_timeout) > 0;
  }
  // False once the client is gone (a server-sent event stream ends then).
  bool is_writable() const override {
    int events = poll_one(fd_, POLLOUT, limits_.write_timeout);
    if (events <= 0 || (events & (POLLERR | POLLHUP | POLLNVAL))) return false;
    char byte;
    return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (refusal_ != 0) return -1;
    if (begin_ == end_ && !fill()) return eof_ ? 0 : -1;
    const std::size_t n = std::min(size, end_ - begin_);
    account(buffer_ + begin_, n);
    if (refusal_ != 0) return -1;
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    wrote_ = true;
    std::size_t done = 0;
    while (done < size) {
      short want = 0;
      if (ssl_) {
        int n = SSL_write(ssl_, ptr + done, static_cast<int>(size - done));
        if (n > 0) {
          done += static_cast<std::size_t>(n);
          continue;
        }
        want = ssl_wants(n);
      } else {
        ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
        if (n > 0) {
          done += static_cast<std::size_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) want = POLLOUT;
      }
      if (want == 0 || poll_one(fd_, want, limits_.write_timeout) <= 0) return -1;
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
      ip = address_text(address, &port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
      ip = address_text(address, &port);
  }
  socket_t socket() const override { return fd_; }

  // Whether a request starts within `timeout` (keep-alive).
  bool wait_for_request(std::chrono::milliseconds timeout) const {
    if (begin_ < end_ || (ssl_ && SSL_pending(ssl_) > 0)) return true;
    int events = poll_one(fd_, POLLIN, timeout);
    return events > 0 && !(events & (POLLERR | POLLNVAL));
  }
  void begin_request() {
    header_deadline_ = Clock::now() + limits_.header_timeout;
    in_body_ = false;
    header_bytes_ = body_bytes_ = 0;
    tail_ = 0;
    wrote_ = false;
  }
  int refusal() const { return refusal_; }
  bool must_close() const { return close_ || refusal_ != 0 || eof_; }
  void close_after() { close_ = true; }
  bool wrote() const { return wrote_; }

 private:
  short ssl_wants(int result) {
    switch (SSL_get_error(ssl_, result)) {
      case SSL_ERROR_WANT_READ:
        return POLLIN;
      case SSL_ERROR_WANT_WRITE:
        return POLLOUT;
      case SSL_ERROR_ZERO_RETURN:
        eof_ = true;
        return 0;
      default:
        return 0;
    }
  }

  // Refills the buffer; false at the end of the stream, on an error or past a limit.
  bool fill() {
    const auto deadline = in_body_ ? body_deadline_ : header_deadline_;
    while (true) {
      short want = 0;
      if (ssl_) {
        int n = SSL_read(ssl_, buffer_, sizeof buffer_);
        if (n > 0) return filled(static_cast<std::size_t>(n));
        want = ssl_wants(n);
      } else {
        ssize_t n = ::recv(fd_, buffer_, sizeof buffer_, 0);
        if (n > 0) return filled(static_cast<std::size_t>(n));
        if (n == 0) eof_ = true;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) want = POLLIN;
      }
      if (want == 0) return false;
      const auto now = Clock::now();
      if (now >= deadline) return refuse(408);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      int events = poll_one(fd_, want, std::min(limits_.read_timeout, left));
      if (events == 0) return refuse(408);
      if (events < 0) return false;
    }
  }
  bool filled(std::size_t n) {
    begin_ = 0;
    end_ = n;
    return true;
  }
  bool refuse(int status) {
    refusal_ = status;
    return false;
  }

  // Counts bytes handed to httplib: the headers end at the first CRLF CRLF of the request.
  void account(const char* data, std::size_t n) {
    std::size_t i = 0;
    for (; !in_body_ && i < n; ++i) {
      ++header_bytes_;
      tail_ = (tail_ << 8) | static_cast<unsigned char>(data[i]);
      if (tail_ == 0x0d0a0d0au) {
        in_body_ = true;
        body_deadline_ = Clock::now() + limits_.body_timeout;
      }
    }
    if (!in_body_ && header_bytes_ > limits_.max_header_bytes) refusal_ = 431;
    if (in_body_) body_bytes_ += n - i;
    if (body_bytes_ > limits_.max_body_bytes) refusal_ = 413;
  }

  socket_t fd_;
  SSL* ssl_;
  const HttpLimits& limits_;
  char buffer_[16 * 1024];
  std::size_t begin_ = 0, end_ = 0;
  Clock::time_point header_deadline_{}, body_deadline_{};
  bool in_body_ = false;
  std::size_t header_bytes_ = 0, body_bytes_ = 0;
  std::uint32_t tail_ = 0;
  int refusal_ = 0;
  bool eof_ = false;
  bool close_ = false;
  bool wrote_ = false;  // anything of an answer to the current request
};

// An answer written without httplib: for a client refused before httplib saw its request.
void raw_answer(Connection& connection, int status, std::string_view reason) {
  const std::string body = nlohmann::json{{"error", reason_of(status)}}.dump();
  const std::string answer = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status, reason, body.size(), body);
  connection.write(answer.data(), answer.size());
}

// The connection this worker thread serves now (handlers and the error handler run on it).
thread_local Connection* t_connection = nullptr;

SSL* accept_tls(socket_t fd, SSL_CTX* context, const HttpLimits& limits) {
  SSL* ssl = SSL_new(context);
  if (!ssl) return nullptr;
  SSL_set_fd(ssl, fd);
  const auto deadline = Clock::now() + limits.header_timeout;
  while (true) {
    int result = SSL_accept(ssl);
    if (result == 1) return ssl;
    int error = SSL_get_error(ssl, result);
    short want = error == SSL_ERROR_WANT_READ    ? POLLIN
                 : error == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                 : 0;
    const auto now = Clock::now();
    if (want == 0 || now >= deadline ||
        poll_one(fd, want,
                 std::min(limits.read_timeout,
                          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now))) <=
            0)
      break;
  }
  SSL_free(ssl);
  return nullptr;
}

// Methods that are not served, unread bodies; then the reads `read_check` guards.
httplib::Server::HandlerResponse refuse_unserved(const Request& req, Response& res,
                                                 const HeaderCheck& read_check) {
  const auto& m = req.method;
  const bool with_body = m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
  if (!with_body && m != "GET" && m != "HEAD" && m != "OPTIONS") {
    close_after_response();
    reply_error(res, 405, fmt::format("method {} is not served", m.substr(0, 16)));
    return httplib::Server::HandlerResponse::Handled;
  }
  // A body on a request that takes none is left unread: close rather than parse it.
  const std::string length = req.get_header_value("Content-Length");
  if (!with_body && (req.has_header("Transfer-Encoding") || (!length.empty() && length != "0")))
    close_after_response();
  if (!with_body && read_check && !read_check(req, res))
    return httplib::Server::HandlerResponse::Handled;
  return httplib::Server::HandlerResponse::Unhandled;
}

void install_guards(httplib::Server& http, const HttpLimits& limits) {
  // httplib's own answers (400, 404, 414, ...) and the refusals of the Connection as JSON.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const Request&, Response& res) {
    const int refusal = t_connection ? t_connection->refusal() : 0;
    if (refusal != 0) {
      reply_error(res, refusal, reason_of(refusal));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!res.body.empty() || res.content_provider_)
      return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, res.status, reason_of(res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const Request& req, Response& res, std::exception_ptr error) {
    try {
      std::rethrow_exception(std::move(error));
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
    } catch (...) {
      spdlog::error("{} {}: an unknown exception", req.method, req.path);
    }
    reply_error(res, 500, "internal error");
  });
  http.set_pre_routing_handler(
      [](const Request& req, Response& res) { return refuse_unserved(req, res, {}); });
  // curl asks before it sends a large body: say no at once when it is over every limit.
  http.set_expect_100_continue_handler(
      [max = limits.max_body_bytes](const Request& req, Response& res) {
        if (req.get_header_value<std::uint64_t>("Content-Length") > max) {
          close_after_response();
          res.status = 413;
          return 413;
        }
        return 100;
      });
}

// Reads the body through httplib's reader, at most `limit` decoded bytes, giving each piece to
// `sink`. False when it answered instead (413, 400, 408) and the connection is to be closed.
bool read_limited(const Request& req, Response& res, const httplib::ContentReader& reader,
                  std::size_t limit, const std::function<bool(const char*, std::size_t)>& sink) {
  const bool chunked =
      req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
  if (!chunked && !req.has_header("Content-Length")) return true;  // HTTP/1.1: no body
  if (!chunked && req.get_header_value<std::uint64_t>("Content-Length") > limit) {
    close_after_response();
    reply_error(res, 413, fmt::format("the request body is over the limit of {} bytes", limit));
    return false;
  }
  std::size_t total = 0;
  bool over = false;
  const bool read = reader([&](const char* data, std::size_t n) {
    total += n;
    if (total > limit) {
      over = true;
      return false;
    }
    return sink(data, n);
  });
  if (read && !over) return true;
  close_after_response();
  const int refusal = t_connection ? t_connection->refusal() : 0;
  if (over || refusal == 413)
    reply_error(res, 413, fmt::format("the request body is over the limit of {} bytes", limit));
  else
    reply_error(res, refusal != 0 ? refusal : 400,
                refusal != 0 ? reason_of(refusal) : "the request body could not be read");
  return false;
}

}  // namespace

bool ClientSlots::take(const std::string& address) {
  MutexLock lock(mutex_);
  int& open = open_[address];
  if (open >= per_client_) return false;
  ++open;
  return true;
}

void ClientSlots::give_back(const std::string& address) {
  MutexLock lock(mutex_);
  if (auto it = open_.find(address); it != open_.end() && --it->second <= 0) open_.erase(it);
}

bool serve_bounded_connection(socket_t sock, SSL_CTX* tls, const HttpLimits& limits,
                              ClientSlots& slots, const std::atomic<socket_t>& listening,
                              std::size_t keep_alive_max, const ProcessRequest& process) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  ::getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length);
  const std::string client = address_text(peer, nullptr);
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  bool result = false;
  if (!slots.take(client)) {
    if (!tls) {
      Connection refused(sock, nullptr, limits);
      raw_answer(refused, 429, "Too Many Requests");
    }
  } else {
    SSL* ssl = tls ? accept_tls(sock, tls, limits) : nullptr;
    if (!tls || ssl) {
      Connection connection(sock, ssl, limits);
      t_connection = &connection;
      const std::function<void(Request&)> setup = [ssl](Request& req) {
        if (ssl) req.ssl = ssl;
      };
      for (std::size_t left = keep_alive_max; left > 0 && listening != INVALID_SOCKET; --left) {
        if (!connection.wait_for_request(limits.keep_alive_timeout)) break;
        connection.begin_request();
        bool closed = false;
        result = process(connection, left == 1, closed, setup);
        // A request line cut off by a limit: httplib gives up without an answer.
        if (connection.refusal() != 0 && !connection.wrote())
          raw_answer(
              connection, connection.refusal(),
              connection.refusal() == 408 ? "Request Timeout" : "Request Header Fields Too Large");
        if (!result || closed || connection.must_close()) break;
      }
      t_connection = nullptr;
      if (ssl) {
        if (result || connection.must_close()) SSL_shutdown(ssl);
        SSL_free(ssl);
      }
      // A client refused in the middle of its body is still sending: closing now would answer
      // its data with a reset that can destroy the refusal before it is read. Stop writing, and
      // discard what comes for up to a second first (a client that read the answer stops sooner).
      if (connection.must_close()) linger(sock, limits);
    }
    slots.give_back(client);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return result;
}

void guard_reads(httplib::Server& http, HeaderCheck check) {
  http.set_pre_routing_handler([check = std::move(check)](const Request& req, Response& res) {
    return refuse_unserved(req, res, check);
  });
}

BoundedHttpServer::BoundedHttpServer(HttpLimits limits)
    : limits_(limits), slots_(limits.connections_per_client) {
  install_guards(*this, limits_);
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  return serve_bounded_connection(
      sock, nullptr, limits_, slots_, svr_sock_, keep_alive_max_count_,
      [this](httplib::Stream& stream, bool close, bool& closed, const auto& setup) {
        return process_request(stream, close, closed, setup);
      });
}

BoundedHttpsServer::BoundedHttpsServer(const char* cert, const char* key, HttpLimits limits)
    : httplib::SSLServer(cert, key), limits_(limits), slots_(limits.connections_per_client) {
  install_guards(*this, limits_);
}

bool BoundedHttpsServer::process_and_close_socket(socket_t sock) {
  return serve_bounded_connection(
      sock, ssl_context(), limits_, slots_, svr_sock_, keep_alive_max_count_,
      [this](httplib::Stream& stream, bool close, bool& closed, const auto& setup) {
        return process_request(stream, close, closed, setup);
      });
}

namespace {
// The listening socket is a protected member of httplib::Server: a pointer to it, taken through
// a class that makes the name public, reads it from any server.
struct ListeningSocket : httplib::Server {
  using httplib::Server::svr_sock_;
};
}  // namespace

bool widen_listen_backlog(httplib::Server& http) {
  const socket_t sock = (http.*&ListeningSocket::svr_sock_).load();
  return sock != INVALID_SOCKET && ::listen(sock, SOMAXCONN) == 0;
}

void close_after_response() {
  if (t_connection) t_connection->close_after();
}

void post_with_body(httplib::Server& http, const std::string& pattern, std::size_t limit,
                    HeaderCheck before_body, BodyHandler handler) {
  http.Post(pattern, [limit, before_body = std::move(before_body), handler = std::move(handler)](
                         const Request& req, Response& res, const httplib::ContentReader& reader) {
    if (before_body && !before_body(req, res)) return close_after_response();
    std::string body;
    if (!read_limited(req, res, reader, limit, [&body](const char* data, std::size_t n) {
          body.append(data, n);
          return true;
        }))
      return;
    Request with_body = req;
    with_body.body = std::move(body);
    handler(with_body, res);
  });
}

void post_streaming(httplib::Server& http, const std::string& pattern, std::size_t limit,
                    StreamingHandler handler) {
  http.Post(pattern, [limit, handler = std::move(handler)](const Request& req, Response& res,
                                                           const httplib::ContentReader& reader) {
    bool read = false;
    handler(req, res, [&](const std::function<bool(const char*, std::size_t)>& sink) {
      read = true;
      return read_limited(req, res, reader, limit, sink);
    });
    if (!read) close_after_response();
  });
}

SpooledBody::~SpooledBody() {
  if (file_) std::fclose(file_);
}

bool SpooledBody::append(const char* data, std::size_t n) {
  size_ += n;
  const std::size_t to_memory = std::min(n, in_memory_ - std::min(in_memory_, head_.size()));
  head_.append(data, to_memory);
  if (to_memory == n) return true;
  if (!file_) file_ = std::tmpfile();
  if (!file_) return false;
  return std::fwrite(data + to_memory, 1, n - to_memory, file_) == n - to_memory;
}

std::optional<std::string> SpooledBody::text() {
  std::string all = head_;
  if (!file_) return all;
  const std::size_t rest = size_ - head_.size();
  all.resize(size_);
  if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0 ||
      std::fread(all.data() + head_.size(), 1, rest, file_) != rest)
    return std::nullopt;
  return all;
}

void refuse_other_bodies(httplib::Server& http) {
  auto refuse = [](const Request& req, Response& res, const httplib::ContentReader&) {
    close_after_response();
    reply_error(res, 404, fmt::format("no {} endpoint at this path", req.method));
  };
  http.Post(".*", httplib::Server::HandlerWithContentReader(refuse));
  http.Put(".*", httplib::Server::HandlerWithContentReader(refuse));
  http.Patch(".*", httplib::Server::HandlerWithContentReader(refuse));
  http.Delete(".*", httplib::Server::HandlerWithContentReader(refuse));
}

}  // namespace kiln::server
