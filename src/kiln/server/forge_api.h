#pragma once
// The REST API of a forge (GitHub, Gitea, Forgejo) at an api_url "scheme://host[:port][/prefix]"
// (Gitea's /api/v1 is part of it): one request with kiln's timeouts and headers, its failure an
// io_error that names the request. Commit statuses (status_client.h) and check runs
// (check_client.h) go through it.

#include <string>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::server {

class ForgeApi {
 public:
  explicit ForgeApi(std::string api_url);  // trailing slashes dropped

  bool has_scheme() const { return has_scheme_; }
  const std::string& url() const { return url_; }

  // METHOD (POST, PATCH) {prefix}{path} with a JSON body and `authorization` as the header's
  // value ("token T", "Bearer JWT"; empty: none). The answer's body on 2xx; else io_error
  // "WHAT: METHOD URL: HTTP N: the start of the answer" (or the connection's failure).
  Result<std::string> send(std::string_view method, const std::string& path,
                           const std::string& authorization, const std::string& body,
                           std::string_view what) const;

 private:
  std::string url_, origin_, prefix_;
  bool has_scheme_ = false;
};

}  // namespace kiln::server
