// GET /metrics: `kiln metrics`'s exposition (engine::gather_host_metrics, one writer:
// report::render_prometheus) plus the server's queue and webhook families.

#include <spdlog/spdlog.h>

#include "kiln/engine/collect/host_metrics.h"
#include "kiln/report/metrics.h"
#include "kiln/report/usage.h"
#include "kiln/server/reply.h"
#include "kiln/server/routes.h"

namespace kiln::server {
namespace {

// A delivery's result, from the answer the service (or the HTTP layer) gave it.
std::string delivery_result(const httplib::Response& res) {
  switch (res.status) {
    case 200:
      return "duplicate";
    case 202:
      return res.body.find("\"ignored\"") != std::string::npos ? "ignored" : "accepted";
    case 401:
      return "bad_signature";
    case 413:
      return "too_large";
    case 503:
      return "unavailable";
    default:
      return res.status >= 400 && res.status < 500 ? "malformed" : "error";
  }
}

}  // namespace

void DeliveryCounters::observe(const httplib::Request& req, const httplib::Response& res) {
  if (req.path != "/webhooks/github") return;
  const std::string result = delivery_result(res);
  MutexLock lock(mutex_);
  ++counts_[result];
}

std::map<std::string, std::int64_t> DeliveryCounters::snapshot() const {
  MutexLock lock(mutex_);
  return counts_;
}

void register_metrics_routes(httplib::Server& http, RouteContext& context) {
  // cpp-httplib calls the logger once per answer, also for the ones it gives without a handler
  // (413 for a body over the limit, 400 for a request it cannot parse).
  http.set_logger([&context](const httplib::Request& req, const httplib::Response& res) {
    context.deliveries.observe(req, res);
  });
  http.Get("/metrics", [&context](const httplib::Request&, httplib::Response& res) {
    auto metrics = engine::gather_host_metrics(context.options.base, context.store);
    if (!metrics) {
      spdlog::warn("GET /metrics: {}", metrics.error().message);
      res.status = 500;
      res.set_content(metrics.error().message + "\n", "text/plain");
      return;
    }
    report::ServeMetrics serve;
    if (auto counts = context.store.count_triggers())
      for (const auto& [status, count] : *counts)
        serve.triggers_by_status[std::string(store::to_string(status))] = static_cast<int>(count);
    serve.runs_running = context.queue.running_runs();
    serve.webhook_deliveries = context.deliveries.snapshot();
    metrics->kiln.serve = std::move(serve);
    res.set_content(report::render_prometheus(metrics->gpus, metrics->kiln),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  // GET /api/usage?since=7d&by=repo: `kiln usage` of the server's store, priced by its kiln.yml.
  http.Get("/api/usage", [&context](const httplib::Request& req, httplib::Response& res) {
    const std::string since_text =
        req.has_param("since") ? req.get_param_value("since") : std::string("7d");
    auto since = config::parse_duration(since_text);
    if (!since) return reply_error(res, 400, "since: " + since.error().message);
    auto by = report::parse_usage_by(req.has_param("by") ? req.get_param_value("by") : "repo");
    if (!by) return reply_error(res, 400, by.error().message);
    report::UsageQuery query;
    query.by = *by;
    query.since = store::now_ms() - since->count();
    query.prices = context.options.config.gpu_prices;
    auto usage = report::usage(context.store, query);
    if (!usage) return reply_error(res, usage.error());
    reply(res, 200, report::to_json(*usage, query));
  });
}

}  // namespace kiln::server
