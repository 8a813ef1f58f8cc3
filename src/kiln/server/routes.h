#pragma once
// Routes of `kiln serve` that live apart from server.cpp, each group registered by one call
// from Service::routes(): re-runs and artifacts (run_routes.cpp), quarantined tests
// (test_routes.cpp), GET /metrics and the webhook delivery counters (metrics_routes.cpp).
// docs/serve.md has the API table.

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/core/thread_annotations.h"
#include "kiln/server/run_queue.h"
#include "kiln/server/server.h"
#include "kiln/store/store.h"

namespace kiln::server {

// Counts webhook deliveries by result, from each answer of POST /webhooks/github (also the
// ones the HTTP layer gives itself, such as 413 for a body over the limit). Thread-safe.
class DeliveryCounters {
 public:
  void observe(const httplib::Request& req, const httplib::Response& res) EXCLUDES(mutex_);
  std::map<std::string, std::int64_t> snapshot() const EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  std::map<std::string, std::int64_t> counts_ GUARDED_BY(mutex_);
};

// What the routes share with the service.
struct RouteContext {
  const ServeOptions& options;
  store::Store& store;
  RunQueue& queue;
  const std::atomic<bool>& draining;
  // The service's bearer-token check: false after it answered 401/403.
  std::function<bool(const httplib::Request&, httplib::Response&)> authorized;
  DeliveryCounters deliveries;
};

// The repositories a listing route is asked about: `?repository=OWNER/NAME`, else every one
// kiln.yml serves (serve.repositories).
std::vector<std::string> requested_repositories(const RouteContext& context,
                                                const httplib::Request& req);

// A re-run of a finished run (POST /api/runs/ID/rerun, a check run's "Re-run" on the forge): a
// new trigger with the run's event, commit and payload that runs only its workflow, as its next
// attempt.
struct RerunRequest {
  std::int64_t run_id = 0;
  bool failed_only = false;
  std::string repository = {};  // non-empty: the run must be this repository's (else not_found)
  std::string delivery = {};    // the webhook's delivery id: a redelivery queues nothing
  std::string identity = {};    // the payload's identity (webhook.h): a replay queues nothing
  std::string why = {};         // appended to the trigger's message
};
// The answer: {"trigger", "rerun_of", "failed_only", "attempt"}, or {"duplicate": DELIVERY}.
// not_found for an unknown run; invalid_input (409) for a run that has not ended, a failed-only
// re-run of a run that succeeded, or a run another server started.
Result<nlohmann::ordered_json> queue_rerun(store::Store& store, RunQueue& queue,
                                           const RerunRequest& request);

// POST /api/runs/ID/rerun, GET /api/runs/ID/artifacts, GET /api/runs/ID/artifacts/NAME.
void register_run_routes(httplib::Server& http, RouteContext& context);
// GET /api/tests/quarantine (test_routes.cpp).
void register_test_routes(httplib::Server& http, RouteContext& context);
// GET /api/benchmarks: benchmark_routes.h.
void register_benchmark_routes(httplib::Server& http, RouteContext& context);
// GET /metrics, and the logger that counts webhook deliveries.
void register_metrics_routes(httplib::Server& http, RouteContext& context);

}  // namespace kiln::server
