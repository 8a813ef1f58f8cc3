#include "kiln/cli/api_client.h"

#include <httplib.h>

#include <cstdlib>
#include <fstream>

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

int post(const ClientArgs& args, const std::string& path, const nlohmann::json& body) {
  std::string server = args.server;
  if (server.empty()) {
    const char* env = std::getenv("KILN_SERVER");
    server = env && *env ? env : "http://127.0.0.1:8080";
  }
  std::string token = args.token;
  if (token.empty() && !args.token_file.empty()) {
    std::ifstream in(args.token_file);
    if (!in || !std::getline(in, token) || token.empty()) {
      fmt::print(stderr, "kiln: error: --token-file {}: cannot read a token from it\n",
                 args.token_file);
      return 2;
    }
    if (token.back() == '\r') token.pop_back();
  }
  for (const char* name : {"KILN_API_TOKEN", "KILN_TOKEN"})
    if (const char* env = std::getenv(name); token.empty() && env) token = env;
  std::string cacert = args.cacert;
  if (cacert.empty()) {
    if (const char* env = std::getenv("KILN_CA_CERT")) cacert = env;
  }
  httplib::Client client(server);
  if (!cacert.empty()) client.set_ca_cert_path(cacert);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto response = client.Post(path, headers, body.dump(), "application/json");
  if (!response) {
    fmt::print(stderr, "kiln: error: {}{}: {}\n", server, path,
               httplib::to_string(response.error()));
    return 3;
  }
  auto answer = nlohmann::json::parse(response->body, nullptr, false);
  if (response->status >= 200 && response->status < 300) {
    fmt::print("{}\n", answer.is_discarded() ? response->body : answer.dump());
    return 0;
  }
  std::string message = !answer.is_discarded() && answer.contains("error")
                            ? answer["error"].get<std::string>()
                            : response->body;
  fmt::print(stderr, "kiln: error: HTTP {}: {}\n", response->status, message);
  return response->status >= 400 && response->status < 500 ? 2 : 3;
}

}  // namespace kiln::cli
