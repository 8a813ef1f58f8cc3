#include "kiln/server/bisect.h"

#include <algorithm>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

namespace kiln::server {
namespace {

// A string member, "" when absent or not a string.
std::string text(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The bisection's own runs are on branches kiln-bisect/TRIGGER (RunQueue::bisect): never a
// last good run.
bool is_bisect_branch(const std::string& branch) { return branch.starts_with("kiln-bisect/"); }

}  // namespace

nlohmann::json to_payload(const BisectRequest& r) {
  return {{"run", r.run},
          {"job", r.job},
          {"workflow_job", r.workflow_job},
          {"workflow", r.workflow},
          {"benchmark", r.benchmark},
          {"metric", r.metric},
          {"good", r.good},
          {"bad", r.bad},
          {"threshold_percent", r.threshold * 100},
          {"testbed", r.testbed},
          {"gpu_models", r.pin.models},
          {"gpu_driver", r.pin.driver},
          {"gpu_uuids", r.pin.uuids}};
}

Result<BisectRequest> parse_bisect_request(const nlohmann::json& payload) {
  BisectRequest r;
  if (!payload.is_object() || !payload.contains("run") || !payload["run"].is_number_integer())
    return fail(ErrorCode::invalid_input, "a bisection trigger without its run");
  r.run = payload["run"].get<std::int64_t>();
  r.job = text(payload, "job");
  r.workflow_job = text(payload, "workflow_job");
  r.workflow = text(payload, "workflow");
  r.benchmark = text(payload, "benchmark");
  r.metric = text(payload, "metric");
  r.good = text(payload, "good");
  r.bad = text(payload, "bad");
  r.testbed = text(payload, "testbed");
  if (auto t = payload.find("threshold_percent"); t != payload.end() && t->is_number())
    r.threshold = t->get<double>() / 100;
  r.pin.driver = text(payload, "gpu_driver");
  for (const char* key : {"gpu_models", "gpu_uuids"})
    if (auto list = payload.find(key); list != payload.end() && list->is_array())
      for (const auto& item : *list)
        if (item.is_string())
          (std::string_view(key) == "gpu_models" ? r.pin.models : r.pin.uuids)
              .push_back(item.get<std::string>());
  if (r.job.empty() || r.workflow_job.empty() || r.benchmark.empty() || r.good.empty() ||
      r.bad.empty())
    return fail(ErrorCode::invalid_input,
                "a bisection trigger without its job, benchmark or commits");
  return r;
}

Status post_on_run(store::Store& store, std::int64_t run_id, const nlohmann::json& result) {
  KILN_TRY(auto run, store.get_run(run_id));
  if (!run.extra.is_object()) run.extra = nlohmann::json::object();
  run.extra["bisect"] = result;
  return store.update_run(run);
}

namespace {

// The regression's request, or nothing (with a log line) when it cannot be bisected.
std::optional<BisectRequest> make_request(store::Store& store,
                                          const engine::WorkflowRunSummary& run,
                                          const engine::JobSummary& job,
                                          const nlohmann::ordered_json& row) {
  BisectRequest r;
  r.run = run.run_id;
  r.job = job.key;
  r.workflow_job = job.job_id;
  r.benchmark = row.value("benchmark", "");
  r.metric = row.value("metric", "");
  if (auto t = row.find("threshold_percent"); t != row.end() && t->is_number())
    r.threshold = t->get<double>() / 100 / 2;  // half the gate's: a remeasured step may be less
  store::BenchmarkQuery query;
  query.benchmark = r.benchmark;
  query.metric = r.metric;
  query.run_id = run.run_id;
  auto own = store.list_benchmark_results(query);
  if (!own || own->empty()) return std::nullopt;
  const auto& bad = own->back();
  r.bad = bad.commit_sha;
  r.testbed = bad.testbed;
  // The last good run: the newest other result on the testbed, of the same branch when there is
  // one (the gate's baseline, for a push to the default branch), else of any branch.
  query.run_id.reset();
  query.repository = bad.repository;
  query.testbed = bad.testbed;
  query.exclude_run_id = run.run_id;
  query.limit = 500;
  auto past = store.list_benchmark_results(query);
  if (!past) return std::nullopt;
  for (bool same_branch : {true, false}) {
    for (auto it = past->rbegin(); it != past->rend() && r.good.empty(); ++it)
      if (it->commit_sha != r.bad && !is_bisect_branch(it->branch) &&
          (!same_branch || it->branch == bad.branch))
        r.good = it->commit_sha;
  }
  if (r.good.empty()) return std::nullopt;
  if (auto stored = store.get_run(run.run_id)) r.workflow = stored->workflow_path;
  if (auto row_job = store.get_job(job.store_id); row_job && row_job->extra.is_object())
    if (auto gpus = row_job->extra.find("gpus"); gpus != row_job->extra.end() && gpus->is_array())
      for (const auto& g : *gpus) {
        if (!g.is_object()) continue;
        r.pin.uuids.push_back(text(g, "uuid"));
        if (auto model = text(g, "model");
            std::find(r.pin.models.begin(), r.pin.models.end(), model) == r.pin.models.end())
          r.pin.models.push_back(model);
        r.pin.driver = text(g, "driver");
      }
  return r;
}

}  // namespace

std::vector<std::int64_t> request_bisections(store::Store& store, const store::Trigger& trigger,
                                             const engine::RunReport& report) {
  std::vector<std::int64_t> ids;
  for (const auto& run : report.runs)
    for (const auto& job : run.jobs) {
      if (!job.perf.is_object() || !job.perf.contains("rows") || !job.perf["rows"].is_array())
        continue;
      for (const auto& row : job.perf["rows"]) {
        if (!row.is_object() || row.value("verdict", "") != "regression") continue;
        auto request = make_request(store, run, job, row);
        if (!request) {
          spdlog::warn("run {}: {} regressed, but no earlier result to bisect from", run.run_id,
                       job.key);
          break;
        }
        store::Trigger bisect;
        bisect.identity = fmt::format("bisect:{}:{}:{}:{}:{}", trigger.repository, request->bad,
                                      request->job, request->benchmark, request->metric);
        bisect.repository = trigger.repository;
        bisect.event = "bisect";
        bisect.ref = trigger.ref;
        bisect.sha = request->bad;
        bisect.sender = "kiln";
        bisect.status = store::TriggerStatus::queued;
        bisect.message = fmt::format("bisect {} of run {} from {}", request->benchmark,
                                     request->run, request->good.substr(0, 10));
        bisect.payload = to_payload(*request);
        auto created = store.create_trigger(bisect);
        if (!created) {
          spdlog::error("run {}: cannot queue a bisection: {}", run.run_id,
                        created.error().message);
        } else if (*created) {
          ids.push_back(**created);
          nlohmann::json posted = {{"status", "queued"},
                                   {"trigger", **created},
                                   {"benchmark", request->benchmark},
                                   {"metric", request->metric},
                                   {"good", request->good},
                                   {"bad", request->bad}};
          if (auto written = post_on_run(store, run.run_id, posted); !written)
            spdlog::warn("run {}: {}", run.run_id, written.error().message);
          spdlog::info("run {}: {} regressed: bisection queued as trigger {}", run.run_id,
                       request->benchmark, **created);
        }
        break;  // one bisection per job: its first regressed benchmark
      }
    }
  return ids;
}

}  // namespace kiln::server
