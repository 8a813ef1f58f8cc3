#pragma once
// Commit statuses on the forge: POST {api_url}/repos/OWNER/REPO/statuses/SHA with
// {state, target_url, description, context} and `Authorization: token TOKEN`. GitHub, Gitea and
// Forgejo all take this request (Gitea/Forgejo under /api/v1, which is part of api_url).

#include <string>

#include "kiln/core/result.h"
#include "kiln/server/forge_api.h"

namespace kiln::server {

struct CommitStatus {
  std::string state;        // pending, success, failure, error
  std::string context;      // "kiln / CI / build": one status line per job
  std::string description;  // one line for a person
  std::string target_url;   // link to the run on the server
};

class StatusClient {
 public:
  // `api_url`: http(s)://host[:port][/prefix]; `token`: empty sends no Authorization header.
  StatusClient(std::string api_url, std::string token);

  // One POST; an HTTP status other than 2xx or a connection failure is an io_error.
  Status post(const std::string& repository, const std::string& sha,
              const CommitStatus& status) const;

 private:
  ForgeApi api_;
  std::string token_;
};

}  // namespace kiln::server
