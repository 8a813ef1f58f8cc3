// Quarantined tests over the API (docs/serve.md, docs/failures.md "Quarantined tests").

#include <string>

#include <nlohmann/json.hpp>

#include "kiln/server/reply.h"
#include "kiln/server/routes.h"

namespace kiln::server {

std::vector<std::string> requested_repositories(const RouteContext& context,
                                                const httplib::Request& req) {
  if (req.has_param("repository")) return {req.get_param_value("repository")};
  std::vector<std::string> repositories;
  for (const auto& repository : context.options.config.serve.repositories)
    repositories.push_back(repository.name);
  return repositories;
}

namespace {

using json = nlohmann::ordered_json;

// GET /api/tests/quarantine[?repository=OWNER/NAME]: the tests in quarantine now (not released,
// not expired) of the served repositories, or of the one named, by repository and test. What
// `kiln tests list --json` calls `quarantined`, with the repository of each.
void list_quarantine(RouteContext& context, const httplib::Request& req, httplib::Response& res) {
  const std::vector<std::string> repositories = requested_repositories(context, req);
  const store::TimeMs now = store::now_ms();
  json tests = json::array();
  for (const auto& repository : repositories) {
    auto records = context.store.list_test_quarantine(repository);
    if (!records) return reply_error(res, 500, records.error().message);
    for (const auto& record : *records) {
      if (!record.active(now)) continue;
      tests.push_back({{"repository", record.repository},
                       {"test", record.test},
                       {"reason", record.reason},
                       {"manual", record.manual},
                       {"since", record.since},
                       {"expires_at", record.expires_at}});
    }
  }
  reply(res, 200, {{"quarantined", std::move(tests)}});
}

}  // namespace

void register_test_routes(httplib::Server& http, RouteContext& context) {
  http.Get("/api/tests/quarantine",
           [&context](const httplib::Request& req, httplib::Response& res) {
             list_quarantine(context, req, res);
           });
}

}  // namespace kiln::server
