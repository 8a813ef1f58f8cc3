#pragma once
// The HTTP server of `kiln serve` with every request bounded while it is read (issue 26):
// cpp-httplib 0.11 (Debian's compiled library) reads a chunked body whole, with no limit, and
// header lines and their number without one; a client sending a byte every few seconds holds a
// worker thread as long as it likes. These servers replace httplib's connection loop with one
// over their own Stream, which counts and times every byte before httplib sees it:
//  - the request line and headers: at most HttpLimits::max_header_bytes, all within
//    header_timeout from the request's first byte (else 431 / 408, and the connection closes);
//  - the body as sent (chunk framing included): at most max_body_bytes, all within
//    body_timeout (413 / 408); each read waits at most read_timeout;
//  - at most connections_per_client open connections from one address (429, then closed);
//  - methods that carry no body we serve (PRI, CONNECT, ...) get 405 before anything is read.
// Routes that take a body register through post_with_body(), which applies the route's own
// (smaller) limit to the decoded body while reading it and can refuse before reading at all.

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "kiln/core/thread_annotations.h"

namespace kiln::server {

struct HttpLimits {
  std::size_t max_header_bytes = 64 * 1024;
  // GitHub caps webhook payloads at 25 MB; 1 MiB more leaves room for chunk framing.
  std::size_t max_body_bytes = 26 * 1024 * 1024;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds read_timeout{5'000};
  std::chrono::milliseconds write_timeout{5'000};
  std::chrono::milliseconds keep_alive_timeout{5'000};
  int connections_per_client = 64;
};

// Counts open connections per client address (thread-safe).
class ClientSlots {
 public:
  explicit ClientSlots(int per_client) : per_client_(per_client) {}
  bool take(const std::string& address) EXCLUDES(mutex_);
  void give_back(const std::string& address) EXCLUDES(mutex_);

 private:
  int per_client_;
  Mutex mutex_;
  std::map<std::string, int> open_ GUARDED_BY(mutex_);
};

// The connection loop both servers share: `process` is httplib's process_request.
using ProcessRequest =
    std::function<bool(httplib::Stream&, bool close_connection, bool& connection_closed,
                       const std::function<void(httplib::Request&)>&)>;
bool serve_bounded_connection(socket_t sock, SSL_CTX* tls, const HttpLimits& limits,
                              ClientSlots& slots, const std::atomic<socket_t>& listening,
                              std::size_t keep_alive_max, const ProcessRequest& process);

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(HttpLimits limits = {});

 private:
  bool process_and_close_socket(socket_t sock) override;
  HttpLimits limits_;
  ClientSlots slots_;
};

class BoundedHttpsServer : public httplib::SSLServer {
 public:
  BoundedHttpsServer(const char* cert, const char* key, HttpLimits limits = {});

 private:
  bool process_and_close_socket(socket_t sock) override;
  HttpLimits limits_;
  ClientSlots slots_;
};

// httplib (Debian's build) listens with a backlog of 5: a burst of connections beyond it has its
// SYNs dropped and waits for the client's retries (1 s, then 3 s...). Called once `http` is
// bound, before listen_after_bind: the backlog becomes SOMAXCONN (Linux takes a second listen()
// on a listening socket as a new backlog). False when there is no bound socket.
bool widen_listen_backlog(httplib::Server& http);

// Called from a handler: the connection is closed after this answer (a body left unread).
void close_after_response();

// POST `pattern` whose body `handler` gets in req.body, decoded, at most `limit` bytes (413
// beyond it, checked while reading). `before_body` (optional) decides from the headers alone:
// false means it answered (401, 404, ...), and the body is never read.
using BodyHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
using HeaderCheck = std::function<bool(const httplib::Request&, httplib::Response&)>;
void post_with_body(httplib::Server& http, const std::string& pattern, std::size_t limit,
                    HeaderCheck before_body, BodyHandler handler);

// POST `pattern` whose handler reads the body itself through `read`: each piece in order;
// `read` returns false when the body ended badly: over `limit` (413 set), cut off or timed out.
using PieceReader = std::function<bool(const std::function<bool(const char*, std::size_t)>&)>;
using StreamingHandler =
    std::function<void(const httplib::Request&, httplib::Response&, const PieceReader& read)>;
void post_streaming(httplib::Server& http, const std::string& pattern, std::size_t limit,
                    StreamingHandler handler);

// A request body kept in memory up to `in_memory` bytes and beyond that in an unlinked
// temporary file, so that a body read before it can be authenticated costs little memory.
class SpooledBody {
 public:
  explicit SpooledBody(std::size_t in_memory) : in_memory_(in_memory) {}
  ~SpooledBody();
  SpooledBody(const SpooledBody&) = delete;
  SpooledBody& operator=(const SpooledBody&) = delete;

  bool append(const char* data, std::size_t n);  // false when the temporary file failed
  std::optional<std::string> text();             // the whole body; nullopt: unreadable
  std::size_t size() const { return size_; }

 private:
  std::size_t in_memory_;
  std::string head_;
  std::FILE* file_ = nullptr;
  std::size_t size_ = 0;
};

// Every GET/HEAD/OPTIONS passes `check` before routing (serve.dashboard: private): false means it
// answered (401, 403). Replaces the check set before; the method and body guards stay.
void guard_reads(httplib::Server& http, HeaderCheck check);

// Answers every POST/PUT/PATCH/DELETE that no route above took with 404, without reading its
// body. Register it after the last route.
void refuse_other_bodies(httplib::Server& http);

}  // namespace kiln::server
