// Re-runs and artifacts over the API (docs/serve.md).

#include <fstream>
#include <optional>
#include <thread>

#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kiln/server/bounded_http.h"
#include "kiln/server/query.h"
#include "kiln/server/reply.h"
#include "kiln/server/routes.h"
#include "kiln/server/zip_archive.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using httplib::Request;
using httplib::Response;

constexpr std::size_t k_max_rerun_body = 64 * 1024;

// The trigger whose runs include `run_id`: a re-run repeats its event.
std::optional<store::Trigger> trigger_of(store::Store& store, std::int64_t run_id) {
  auto triggers = store.list_triggers(std::nullopt, 0);
  if (!triggers) return std::nullopt;
  for (auto& trigger : *triggers)
    if (trigger.run_ids.is_array())
      for (const auto& id : trigger.run_ids)
        if (id.is_number_integer() && id.get<std::int64_t>() == run_id) return trigger;
  return std::nullopt;
}

// POST /api/runs/ID/rerun {"failed_only": bool}.
void rerun(RouteContext& context, const Request& req, Response& res) {
  if (context.draining) return reply_error(res, 503, "the server is shutting down");
  const auto id = path_id(req, res, "run");
  if (!id) return;
  bool failed_only = false;
  if (!req.body.empty()) {
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || (body.contains("failed_only") && !body["failed_only"].is_boolean()))
      return reply_error(res, 400, "expected {\"failed_only\": true|false}");
    failed_only = body.value("failed_only", false);
  }
  auto queued =
      queue_rerun(context.store, context.queue, {.run_id = *id, .failed_only = failed_only});
  if (!queued) return reply_error(res, queued.error());
  reply(res, 202, *queued);
}

json artifact_json(std::int64_t run_id, const store::Artifact& artifact) {
  return {{"id", artifact.id},
          {"name", artifact.name},
          {"size", artifact.size_bytes},
          {"files", artifact.file_count},
          {"job_id", artifact.job_id ? json(*artifact.job_id) : json(nullptr)},
          {"created_at", artifact.created_at},
          {"expires_at", artifact.expires_at},
          {"url", fmt::format("/api/runs/{}/artifacts/{}", run_id, artifact.name)}};
}

void list_artifacts(RouteContext& context, const Request& req, Response& res) {
  if (!context.authorized(req, res)) return;
  const auto id = path_id(req, res, "run");
  if (!id) return;
  const std::int64_t run_id = *id;
  if (auto run = context.store.get_run(run_id); !run) return reply_error(res, run.error());
  auto artifacts = context.store.list_artifacts(run_id);
  if (!artifacts) return reply_error(res, 500, artifacts.error().message);
  json out = json::array();
  for (const auto& artifact : *artifacts) out.push_back(artifact_json(run_id, artifact));
  reply(res, 200, {{"artifacts", out}});
}

// The artifact's files as a zip (what GitHub gives for an upload-artifact artifact), written to
// a temporary file and streamed from it, so a large artifact is not held in memory.
void download_artifact(RouteContext& context, const Request& req, Response& res) {
  if (!context.authorized(req, res)) return;
  const auto id = path_id(req, res, "run");
  if (!id) return;
  const std::int64_t run_id = *id;
  const std::string name = req.matches[2].str();
  auto artifact = context.store.find_artifact(run_id, name);
  if (!artifact) return reply_error(res, artifact.error());
  std::error_code ec;
  if (!fs::is_directory(artifact->path, ec))
    return reply_error(res, 410, fmt::format("the files of artifact {} are gone", name));
  const fs::path zip_path = fs::temp_directory_path() /
                            fmt::format("kiln-artifact-{}-{}-{}.zip", run_id, artifact->id,
                                        std::hash<std::thread::id>{}(std::this_thread::get_id()));
  if (auto written = write_zip(artifact->path, zip_path); !written)
    return reply_error(res, 500, written.error().message);
  const auto size = fs::file_size(zip_path, ec);
  auto file = std::make_shared<std::ifstream>(zip_path, std::ios::binary);
  fs::remove(zip_path, ec);  // the open stream keeps the data until it is closed
  if (!*file) return reply_error(res, 500, "cannot read the zip file back");
  res.set_header("Content-Disposition", fmt::format("attachment; filename=\"{}.zip\"", name));
  res.set_content_provider(
      static_cast<std::size_t>(size), "application/zip",
      [file](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        char buffer[64 * 1024];
        file->seekg(static_cast<std::streamoff>(offset));
        file->read(buffer, static_cast<std::streamsize>(std::min(length, sizeof buffer)));
        const auto got = file->gcount();
        if (got <= 0) return false;
        return sink.write(buffer, static_cast<std::size_t>(got));
      });
}

}  // namespace

Result<nlohmann::ordered_json> queue_rerun(store::Store& store, RunQueue& queue,
                                           const RerunRequest& request) {
  const std::int64_t run_id = request.run_id;
  KILN_TRY(auto run, store.get_run(run_id));
  if (!request.repository.empty() && run.repository != request.repository)
    return fail(ErrorCode::not_found, "run {} is not a run of {}", run_id, request.repository);
  if (!store::is_terminal(run.status))
    return fail(ErrorCode::invalid_input, "run {} is {}: wait until it ends", run_id,
                store::to_string(run.status));
  if (request.failed_only && run.status == store::RunStatus::success)
    return fail(ErrorCode::invalid_input, "run {} succeeded: no job to re-run", run_id);
  auto original = trigger_of(store, run_id);
  if (!original)
    return fail(ErrorCode::invalid_input, "run {} was not started by this server", run_id);
  store::Trigger trigger = *original;
  trigger.id = 0;
  trigger.delivery = request.delivery;
  trigger.identity = request.identity;
  trigger.status = store::TriggerStatus::queued;
  trigger.message = fmt::format("re-run of run {}{}{}", run_id,
                                request.failed_only ? " (failed jobs)" : "", request.why);
  trigger.run_ids = nullptr;
  trigger.rerun = {{"run", run_id}, {"failed_only", request.failed_only}};
  trigger.created_at = 0;
  trigger.updated_at = 0;
  KILN_TRY(auto created, store.create_trigger(trigger));
  if (!created) return json{{"duplicate", request.delivery}};
  queue.enqueue(*created);
  spdlog::info("run {}: re-run queued as trigger {}{}{}", run_id, *created,
               request.failed_only ? " (failed jobs)" : "", request.why);
  return json{{"trigger", *created},
              {"rerun_of", run_id},
              {"failed_only", request.failed_only},
              {"attempt", run.attempt + 1}};
}

void register_run_routes(httplib::Server& http, RouteContext& context) {
  post_with_body(http, R"(/api/runs/(\d+)/rerun)", k_max_rerun_body, context.authorized,
                 [&context](const Request& req, Response& res) { rerun(context, req, res); });
  http.Get(R"(/api/runs/(\d+)/artifacts)",
           [&context](const Request& req, Response& res) { list_artifacts(context, req, res); });
  http.Get(R"(/api/runs/(\d+)/artifacts/([^/]+))",
           [&context](const Request& req, Response& res) { download_artifact(context, req, res); });
}

}  // namespace kiln::server
