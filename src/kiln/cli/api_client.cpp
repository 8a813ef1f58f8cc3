#include "kiln/cli/api_client.h"

#include <httplib.h>

#include <cstdio>
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

namespace {

// The server, the token and the CA of a command's options and environment, resolved once.
struct Connection {
  std::string server;
  httplib::Headers headers;
  std::string cacert;
};

Result<Connection> connect(const ClientArgs& args) {
  Connection out;
  out.server = server_url(args);
  std::string token = args.token;
  if (token.empty() && !args.token_file.empty()) {
    std::ifstream in(args.token_file);
    if (!in || !std::getline(in, token) || token.empty())
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("--token-file {}: cannot read a token from it", args.token_file));
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

// The answer of one request: a 2xx's body (JSON, or the text as a JSON string); a 4xx is
// invalid_input (exit 2), anything else io_error (exit 3).
Result<nlohmann::json> answer_of(const Connection& connection, const std::string& path,
                                 const httplib::Result& response) {
  if (!response)
    return make_error(ErrorCode::io_error, fmt::format("{}{}: {}", connection.server, path,
                                                       httplib::to_string(response.error())));
  auto answer = nlohmann::json::parse(response->body, nullptr, false);
  if (response->status >= 200 && response->status < 300) {
    if (answer.is_discarded()) return nlohmann::json(response->body);
    return answer;
  }
  std::string message = !answer.is_discarded() && answer.is_object() && answer.contains("error") &&
                                answer["error"].is_string()
                            ? answer["error"].get<std::string>()
                            : response->body;
  return make_error(response->status >= 400 && response->status < 500 ? ErrorCode::invalid_input
                                                                      : ErrorCode::io_error,
                    fmt::format("HTTP {}: {}", response->status, message));
}

enum class Method { get, post };

Result<nlohmann::json> request(const ClientArgs& args, Method method, const std::string& path,
                               const nlohmann::json& body) {
  KILN_TRY(auto connection, connect(args));
  httplib::Client client(connection.server);
  if (!connection.cacert.empty()) client.set_ca_cert_path(connection.cacert);
  if (method == Method::get)
    return answer_of(connection, path, client.Get(path, connection.headers));
  return answer_of(connection, path,
                   client.Post(path, connection.headers, body.dump(), "application/json"));
}

int print_error(const Error& error) {
  fmt::print(stderr, "kiln: error: {}\n", error.message);
  return error.exit_code();
}

}  // namespace

std::string server_url(const ClientArgs& args) {
  std::string server = args.server;
  if (server.empty()) {
    const char* env = std::getenv("KILN_SERVER");
    server = env && *env ? env : "http://127.0.0.1:8080";
  }
  while (server.size() > 1 && server.back() == '/') server.pop_back();
  return server;
}

int post(const ClientArgs& args, const std::string& path, const nlohmann::json& body,
         nlohmann::json* answer_out) {
  auto answer = request(args, Method::post, path, body);
  if (!answer) return print_error(answer.error());
  fmt::print("{}\n", answer->is_string() ? answer->get<std::string>() : answer->dump());
  std::fflush(stdout);
  if (answer_out) *answer_out = std::move(*answer);
  return 0;
}

int get(const ClientArgs& args, const std::string& path, nlohmann::json& answer) {
  auto got = fetch(args, path);
  if (!got) return print_error(got.error());
  answer = std::move(*got);
  return 0;
}

std::string json_text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t json_integer(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

Result<nlohmann::json> fetch(const ClientArgs& args, const std::string& path) {
  return request(args, Method::get, path, nlohmann::json::object());
}

}  // namespace kiln::cli
