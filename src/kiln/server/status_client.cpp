#include "kiln/server/status_client.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace kiln::server {

StatusClient::StatusClient(std::string api_url, std::string token)
    : api_(std::move(api_url)), token_(std::move(token)) {}

Status StatusClient::post(const std::string& repository, const std::string& sha,
                          const CommitStatus& status) const {
  if (!api_.has_scheme())
    return fail(ErrorCode::invalid_input, "statuses.api_url '{}' has no scheme", api_.url());
  nlohmann::json body = {{"state", status.state},
                         {"context", status.context},
                         {"description", status.description.substr(0, 140)},
                         {"target_url", status.target_url}};
  KILN_TRY_VOID(api_.send("POST", fmt::format("/repos/{}/statuses/{}", repository, sha),
                          token_.empty() ? "" : "token " + token_, body.dump(),
                          fmt::format("commit status for {}", sha)));
  return {};
}

}  // namespace kiln::server
