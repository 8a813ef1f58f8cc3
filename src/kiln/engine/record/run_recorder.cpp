#include "kiln/engine/record/run_recorder.h"

#include <system_error>

#include <fmt/format.h>

#include "kiln/store/process_identity.h"
#include "kiln/store/store.h"

namespace kiln::engine {

std::string_view to_string(JobExtra key) {
  switch (key) {
    case JobExtra::graph:
      return "graph";
    case JobExtra::reused_from:
      return "reused_from";
    case JobExtra::containers:
      return "containers";
    case JobExtra::gpu:
      return "gpu";
    case JobExtra::gpus:
      return "gpus";
    case JobExtra::step_summary:
      return "step_summary";
    case JobExtra::tests:
      return "tests";
    case JobExtra::log_dropped:
      return "log_dropped";
    case JobExtra::slurm:
      return "slurm";
    case JobExtra::annotations:
      return "annotations";
  }
  return "unknown";
}

store::JobStatus to_job_status(store::Conclusion conclusion) {
  switch (conclusion) {
    case store::Conclusion::success:
      return store::JobStatus::success;
    case store::Conclusion::failure:
      return store::JobStatus::failure;
    case store::Conclusion::cancelled:
      return store::JobStatus::cancelled;
    case store::Conclusion::skipped:
      return store::JobStatus::skipped;
  }
  return store::JobStatus::failure;
}

void StoreRunRecorder::check(const Status& status, std::string_view what) {
  if (status) return;
  if (failed_++ == 0 && report_)
    report_(
        fmt::format("cannot write {} to the store: {} (later failed writes of this run are "
                    "not repeated)",
                    what, status.error().to_string()));
}

void StoreRunRecorder::update_job(std::int64_t job_id, std::string_view what,
                                  const std::function<void(store::Job&)>& change) {
  if (job_id == 0) return;  // its creation failed, and was reported
  std::lock_guard lock(rows_mutex_);
  auto row = store_.get_job(job_id);
  if (!row) return check(std::unexpected(row.error()), what);
  change(*row);
  check(store_.update_job(*row), what);
}

Result<store::Run> StoreRunRecorder::create_run(store::Run run) {
  run.created_at = clock_.wall_ms();
  run.started_at = run.created_at;
  run.owner = store::current_process();
  return store_.create_run(run);
}

void StoreRunRecorder::finish_run(std::int64_t run_id, store::RunStatus status) {
  check(store_.set_run_status(run_id, status, clock_.wall_ms()), "a run's status");
}

std::int64_t StoreRunRecorder::create_job(const store::Job& job) {
  auto id = store_.create_job(job);
  if (!id) {
    check(std::unexpected(id.error()), "a job");
    return 0;
  }
  return *id;
}

void StoreRunRecorder::set_job_extra(std::int64_t job_id, JobExtra key, nlohmann::json value) {
  update_job(job_id, "a job's details", [&](store::Job& row) {
    if (!row.extra.is_object()) row.extra = nlohmann::json::object();
    row.extra[std::string(to_string(key))] = std::move(value);
  });
}

void StoreRunRecorder::reuse_job(std::int64_t job_id, const store::Job& earlier) {
  update_job(job_id, "a reused job", [&](store::Job& row) {
    row.outputs = earlier.outputs;
    row.started_at = clock_.wall_ms();
    if (!row.extra.is_object()) row.extra = nlohmann::json::object();
    row.extra[std::string(to_string(JobExtra::reused_from))] = {{"run", earlier.run_id},
                                                                {"job", earlier.id}};
  });
}

void StoreRunRecorder::start_job(std::int64_t job_id) {
  if (job_id == 0) return;
  check(store_.set_job_status(job_id, store::JobStatus::running, clock_.wall_ms()),
        "a job's start");
}

void StoreRunRecorder::record_queue(std::int64_t job_id, const store::JobQueueTime& queue) {
  update_job(job_id, "a job's queue time", [&](store::Job& row) { row.queue = queue; });
}

void StoreRunRecorder::finish_job(std::int64_t job_id, const JobResult& result) {
  update_job(job_id, "a job's result", [&](store::Job& row) {
    row.status = to_job_status(result.conclusion);
    row.conclusion = result.conclusion;
    row.message = result.message;
    row.failure_class = result.failure_class;
    row.failure_evidence = result.failure_evidence;
    if (result.queue) row.queue = *result.queue;
    row.finished_at = clock_.wall_ms();
    if (!result.outputs.is_null()) row.outputs = result.outputs;
    if (!row.extra.is_object()) row.extra = nlohmann::json::object();
    for (const auto& [key, value] : result.extras) row.extra[std::string(to_string(key))] = value;
  });
}

std::vector<std::string> StoreRunRecorder::reuse_artifacts(const store::Job& earlier,
                                                           std::int64_t run_id, std::int64_t job_id,
                                                           const std::filesystem::path& root) {
  std::vector<std::string> warnings;
  auto artifacts = store_.list_artifacts(earlier.run_id);
  if (!artifacts) {
    check(std::unexpected(artifacts.error()), "reused artifacts");
    return warnings;
  }
  for (auto artifact : *artifacts) {
    if (artifact.job_id != earlier.id) continue;
    const auto target = root / artifact.name;
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    std::filesystem::copy(
        artifact.path, target,
        std::filesystem::copy_options::recursive | std::filesystem::copy_options::create_hard_links,
        ec);
    if (ec) {
      ec.clear();
      std::filesystem::copy(artifact.path, target, std::filesystem::copy_options::recursive, ec);
    }
    if (ec) {
      warnings.push_back(fmt::format("cannot reuse artifact {}: {}", artifact.name, ec.message()));
      continue;
    }
    artifact.run_id = run_id;
    artifact.job_id = job_id;
    artifact.path = target.string();
    artifact.created_at = 0;
    artifact.expires_at = 0;
    auto created = store_.create_artifact(artifact);
    if (!created) check(std::unexpected(created.error()), "a reused artifact");
  }
  return warnings;
}

}  // namespace kiln::engine
