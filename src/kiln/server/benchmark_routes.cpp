// GET /api/benchmarks (benchmark_routes.h).

#include "kiln/server/benchmark_routes.h"

#include <map>

#include "kiln/perf/history.h"
#include "kiln/server/query.h"
#include "kiln/server/reply.h"
#include "kiln/server/routes.h"

namespace kiln::server {

using json = nlohmann::ordered_json;

Result<json> benchmarks_json(store::Store& store, const std::vector<std::string>& repositories,
                             int limit) {
  json out = json::array();
  for (const auto& repository : repositories) {
    store::BenchmarkQuery query;
    query.repository = repository;
    KILN_TRY(auto records, store.list_benchmark_results(query));
    std::map<std::string, std::vector<store::BenchmarkResult>> by_name;  // oldest first each
    for (auto& record : records) by_name[record.benchmark].push_back(std::move(record));
    for (const auto& [name, results] : by_name) {
      KILN_TRY(auto history, perf::benchmark_history(results, limit));
      json series = json::array();
      for (const auto& one : history) series.push_back(perf::to_json(one));
      out.push_back({{"repository", repository}, {"benchmark", name}, {"series", series}});
    }
  }
  return json{{"benchmarks", std::move(out)}};
}

void register_benchmark_routes(httplib::Server& http, RouteContext& context) {
  http.Get("/api/benchmarks", [&context](const httplib::Request& req, httplib::Response& res) {
    std::int64_t limit = k_default_history_points;
    if (auto read = read_integers(req.params, {{"limit", &limit, 1, 10000}}); !read)
      return reply_error(res, 400, read.error().message);
    const std::vector<std::string> repositories = requested_repositories(context, req);
    auto out = benchmarks_json(context.store, repositories, static_cast<int>(limit));
    if (!out) return reply_error(res, 500, out.error().message);
    reply(res, 200, *out);
  });
}

}  // namespace kiln::server
