#include "kiln/server/forge_api.h"

#include <httplib.h>

#include <fmt/core.h>

namespace kiln::server {

ForgeApi::ForgeApi(std::string api_url) : url_(std::move(api_url)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  const auto scheme_end = url_.find("://");
  has_scheme_ = scheme_end != std::string::npos;
  const auto path_start = has_scheme_ ? url_.find('/', scheme_end + 3) : std::string::npos;
  origin_ = url_.substr(0, path_start);
  prefix_ = path_start == std::string::npos ? "" : url_.substr(path_start);
}

Result<std::string> ForgeApi::send(std::string_view method, const std::string& path,
                                   const std::string& authorization, const std::string& body,
                                   std::string_view what) const {
  httplib::Client client(origin_);
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  httplib::Headers headers = {{"Accept", "application/vnd.github+json"}, {"User-Agent", "kiln"}};
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  const std::string target = prefix_ + path;
  auto response = method == "PATCH" ? client.Patch(target, headers, body, "application/json")
                                    : client.Post(target, headers, body, "application/json");
  if (!response)
    return fail(ErrorCode::io_error, "{}: {} {}{}: {}", what, method, origin_, target,
                httplib::to_string(response.error()));
  if (response->status < 200 || response->status >= 300)
    return fail(ErrorCode::io_error, "{}: {} {}{}: HTTP {}: {}", what, method, origin_, target,
                response->status, response->body.substr(0, 200));
  return response->body;
}

}  // namespace kiln::server
