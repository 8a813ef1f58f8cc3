#include "kiln/cli/api_client.h"

#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/core.h>

namespace kiln::cli {

void add_client_options(CLI::App* cmd, ClientArgs& args) {
  cmd->add_option("--server", args.server,
                  "the kiln server's URL (default: $KILN_SERVER, else http://127.0.0.1:8080)");
  cmd->add_option("--token", args.token,
                  "API token (default: --token-file, else $KILN_API_TOKEN, else $KILN_TOKEN)");
  cmd->add_option("--token-file", args.token_file,
                  "file holding the API token (its first line), kept out of the process list");
  cmd->add_option("--cacert", args.cacert,
                  "PEM file of the CA (or self-signed certificate) an https --server is checked "
                  "against (default: $KILN_CA_CERT, else the system's CAs)");
}

namespace {

// The server, the token and the CA of a command's options and environment, resolved once.
struct Connection {
  std::string server;
  httplib::Headers headers;
  std::string cacert;
};

// Resolves the options; prints the error and returns nullopt when the token file is unreadable.
std::optional<Connection> connect(const ClientArgs& args) {
  Connection out;
  out.server = args.server;
  if (out.server.empty()) {
    const char* env = std::getenv("KILN_SERVER");
    out.server = env && *env ? env : "http://127.0.0.1:8080";
  }
  std::string token = args.token;
  if (token.empty() && !args.token_file.empty()) {
    std::ifstream in(args.token_file);
    if (!in || !std::getline(in, token) || token.empty()) {
      fmt::print(stderr, "kiln: error: --token-file {}: cannot read a token from it\n",
                 args.token_file);
      return std::nullopt;
    }
    if (token.back() == '\r') token.pop_back();
  }
  for (const char* name : {"KILN_API_TOKEN", "KILN_TOKEN"})
    if (const char* env = std::getenv(name); token.empty() && env) token = env;
  if (!token.empty()) out.headers.emplace("Authorization", "Bearer " + token);
  out.cacert = args.cacert;
  if (out.cacert.empty()) {
    if (const char* env = std::getenv("KILN_CA_CERT")) out.cacert = env;
  }
  return out;
}

// The answer of one request as the exit code: 2xx: 0 (and `answer` set), 4xx: 2, else 3; the
// error is printed.
int answer_of(const Connection& connection, const std::string& path,
              const httplib::Result& response, nlohmann::json& answer) {
  if (!response) {
    fmt::print(stderr, "kiln: error: {}{}: {}\n", connection.server, path,
               httplib::to_string(response.error()));
    return 3;
  }
  answer = nlohmann::json::parse(response->body, nullptr, false);
  if (response->status >= 200 && response->status < 300) {
    if (answer.is_discarded()) answer = response->body;
    return 0;
  }
  std::string message = !answer.is_discarded() && answer.is_object() && answer.contains("error") &&
                                answer["error"].is_string()
                            ? answer["error"].get<std::string>()
                            : response->body;
  fmt::print(stderr, "kiln: error: HTTP {}: {}\n", response->status, message);
  return response->status >= 400 && response->status < 500 ? 2 : 3;
}

}  // namespace

int post(const ClientArgs& args, const std::string& path, const nlohmann::json& body) {
  auto connection = connect(args);
  if (!connection) return 2;
  httplib::Client client(connection->server);
  if (!connection->cacert.empty()) client.set_ca_cert_path(connection->cacert);
  nlohmann::json answer;
  int rc =
      answer_of(*connection, path,
                client.Post(path, connection->headers, body.dump(), "application/json"), answer);
  if (rc == 0) fmt::print("{}\n", answer.is_string() ? answer.get<std::string>() : answer.dump());
  return rc;
}

int get(const ClientArgs& args, const std::string& path, nlohmann::json& answer) {
  auto connection = connect(args);
  if (!connection) return 2;
  httplib::Client client(connection->server);
  if (!connection->cacert.empty()) client.set_ca_cert_path(connection->cacert);
  return answer_of(*connection, path, client.Get(path, connection->headers), answer);
}

}  // namespace kiln::cli
