#pragma once
// Routes of `kiln serve` that live apart from server.cpp, each group registered by one call
// from Service::routes(): re-runs and artifacts (run_routes.cpp), GET /metrics and the
// webhook delivery counters (metrics_routes.cpp). docs/serve.md has the API table.

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

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

// POST /api/runs/ID/rerun, GET /api/runs/ID/artifacts, GET /api/runs/ID/artifacts/NAME.
void register_run_routes(httplib::Server& http, RouteContext& context);
// GET /metrics, and the logger that counts webhook deliveries.
void register_metrics_routes(httplib::Server& http, RouteContext& context);

}  // namespace kiln::server
