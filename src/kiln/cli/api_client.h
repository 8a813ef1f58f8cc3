#pragma once
// The commands that talk to a `kiln serve` API (approve, trigger, rerun, cancel, watch): where
// the server is, the token, and requests whose answers become the exit code.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::cli {

struct ClientArgs {
  std::string server;      // --server, else $KILN_SERVER, else http://127.0.0.1:8080
  std::string token;       // --token, else --token-file, else $KILN_API_TOKEN, else $KILN_TOKEN
  std::string token_file;  // --token-file: a file holding the token (kept out of `ps`)
  std::string cacert;      // --cacert, else $KILN_CA_CERT, else the system's CAs (https servers)
};

void add_client_options(CLI::App* cmd, ClientArgs& args);

// POSTs `body` to the server and prints the answer (kept in `*answer` when given); 2xx: 0,
// 4xx: 2, else 3.
int post(const ClientArgs& args, const std::string& path, const nlohmann::json& body,
         nlohmann::json* answer = nullptr);

// The server's URL as the requests use it (--server, else $KILN_SERVER, else the default),
// without a trailing slash: the base of the links the commands print.
std::string server_url(const ClientArgs& args);

// GETs `path` into `answer` (printing nothing on success); the exit code as post's, the error
// printed.
int get(const ClientArgs& args, const std::string& path, nlohmann::json& answer);

// A field of an API answer: the string or integer, empty or 0 when missing or of another type.
std::string json_text(const nlohmann::json& object, const char* key);
std::int64_t json_integer(const nlohmann::json& object, const char* key);

// GETs `path`: the answer, or the error (HTTP 4xx: invalid_input, exit 2; unreachable, 5xx:
// io_error, exit 3) for the caller to report.
Result<nlohmann::json> fetch(const ClientArgs& args, const std::string& path);

}  // namespace kiln::cli
