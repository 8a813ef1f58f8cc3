#include "kiln/server/status_client.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace kiln::server {

StatusClient::StatusClient(std::string api_url, std::string token)
    : api_url_(std::move(api_url)), token_(std::move(token)) {
  while (!api_url_.empty() && api_url_.back() == '/') api_url_.pop_back();
}

Status StatusClient::post(const std::string& repository, const std::string& sha,
                          const CommitStatus& status) const {
  // Split "scheme://host:port/prefix" into what httplib::Client takes and the path prefix.
  auto scheme_end = api_url_.find("://");
  if (scheme_end == std::string::npos)
    return fail(ErrorCode::invalid_input, "statuses.api_url '{}' has no scheme", api_url_);
  auto path_start = api_url_.find('/', scheme_end + 3);
  std::string origin = api_url_.substr(0, path_start);
  std::string prefix = path_start == std::string::npos ? "" : api_url_.substr(path_start);
  httplib::Client client(origin);
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  httplib::Headers headers = {{"Accept", "application/vnd.github+json"}, {"User-Agent", "kiln"}};
  if (!token_.empty()) headers.emplace("Authorization", "token " + token_);
  nlohmann::json body = {{"state", status.state},
                         {"context", status.context},
                         {"description", status.description.substr(0, 140)},
                         {"target_url", status.target_url}};
  const std::string path = fmt::format("{}/repos/{}/statuses/{}", prefix, repository, sha);
  auto response = client.Post(path, headers, body.dump(), "application/json");
  if (!response)
    return fail(ErrorCode::io_error, "commit status for {}: POST {}{}: {}", sha, origin, path,
                httplib::to_string(response.error()));
  if (response->status < 200 || response->status >= 300)
    return fail(ErrorCode::io_error, "commit status for {}: POST {}{}: HTTP {}", sha, origin, path,
                response->status);
  return {};
}

}  // namespace kiln::server
