#include "kiln/server/api_json.h"

#include "kiln/report/markdown.h"
#include "kiln/report/report.h"

namespace kiln::server {

using json = nlohmann::ordered_json;

namespace {

json conclusion(const std::optional<store::Conclusion>& value) {
  return value ? json(store::to_string(*value)) : json(nullptr);
}

json step_json(const store::Step& step) {
  return {{"index", step.index},
          {"name", step.name},
          {"status", store::to_string(step.status)},
          {"outcome", conclusion(step.outcome)},
          {"conclusion", conclusion(step.conclusion)},
          {"exit_code", step.exit_code ? json(*step.exit_code) : json(nullptr)},
          {"started_at", step.started_at},
          {"finished_at", step.finished_at}};
}

// extra[key] of a run or job row (ordered, as the API answers), or `fallback` when it is absent.
json extra_field(const nlohmann::json& extra, const char* key, json fallback = nullptr) {
  if (extra.is_object() && extra.contains(key)) return json::parse(extra[key].dump());
  return fallback;
}

// The job's place in the needs graph (the scheduler keeps it in extra["graph"]); jobs written
// before it did have no edges.
json graph_field(const store::Job& job, const char* key, json fallback) {
  if (job.extra.is_object() && job.extra.contains("graph") && job.extra["graph"].contains(key))
    return json::parse(job.extra["graph"][key].dump());
  return fallback;
}

json job_json(const store::JobDetail& detail) {
  const auto& job = detail.job;
  json steps = json::array();
  for (const auto& step : detail.steps) steps.push_back(step_json(step));
  return {{"id", job.id},
          {"key", job.key},
          {"job", job.workflow_job_id},
          {"name", job.name},
          {"status", store::to_string(job.status)},
          {"conclusion", conclusion(job.conclusion)},
          {"matrix", json::parse(job.matrix.dump())},
          {"labels", json::parse(job.labels.dump())},
          {"started_at", job.started_at},
          {"finished_at", job.finished_at},
          {"exit_code", job.exit_code ? json(*job.exit_code) : json(nullptr)},
          {"message", job.message},
          {"failure_class", job.failure_class == store::FailureClass::none
                                ? json(nullptr)
                                : json(std::string(store::to_string(job.failure_class)))},
          {"failure_evidence", job.failure_evidence},
          {"node", graph_field(job, "node", json(job.key))},
          {"needs", graph_field(job, "needs", json::array())},
          // A re-run of failed jobs took this job over from an earlier attempt: {run, job}.
          {"reused_from", extra_field(job.extra, "reused_from")},
          // The steps' $GITHUB_STEP_SUMMARY as HTML, made safe by the report's renderer
          // (markdown.h: every character escaped, no raw HTML, links http(s)/mailto/relative).
          {"summary_html",
           job.extra.is_object() && job.extra.contains("step_summary") &&
                   job.extra["step_summary"].is_string()
               ? json(report::markdown_to_html(job.extra["step_summary"].get<std::string>()))
               : json(nullptr)},
          // Its steps' ::error/::warning/::notice with file, line and the step's index (null:
          // set-up or clean-up), in order; jobs stored before kiln kept them have none.
          {"annotations", extra_field(job.extra, "annotations", json::array())},
          // How long it was queued and why (its priority class, the wait per reason).
          {"queue", report::queue_json(job.queue)},
          {"steps", steps}};
}

}  // namespace

json to_json(const store::Run& run) {
  return {{"id", run.id},
          {"number", run.number},
          {"repository", run.repository},
          {"workflow", run.workflow_path},
          {"name", run.workflow_name},
          {"event", run.event},
          {"ref", run.ref},
          {"sha", run.sha},
          {"status", store::to_string(run.status)},
          {"attempt", run.attempt},
          {"rerun_of", run.rerun_of != 0 ? json(run.rerun_of) : json(nullptr)},
          // serve.bisect (bisect.h): the bisection of this run's regression, or the one this
          // run measured for.
          {"bisect", extra_field(run.extra, "bisect")},
          // A served run's trigger {id, sender, received_at} and commit {message, author}
          // (run_queue.cpp); null for runs of `kiln run` and runs stored before.
          {"trigger", extra_field(run.extra, "trigger")},
          {"commit", extra_field(run.extra, "commit")},
          {"created_at", run.created_at},
          {"started_at", run.started_at},
          {"finished_at", run.finished_at}};
}

json to_json(const store::RunDetail& detail) {
  json out = to_json(detail.run);
  out["jobs"] = json::array();
  for (const auto& job : detail.jobs) out["jobs"].push_back(job_json(job));
  return out;
}

json to_json(const store::LogChunk& chunk) {
  return {{"seq", chunk.seq},
          {"job_id", chunk.job_id},
          {"step", chunk.step_index ? json(*chunk.step_index) : json(nullptr)},
          {"stream", store::to_string(chunk.stream)},
          {"text", chunk.text},
          {"time", chunk.time}};
}

json to_json(const store::Trigger& trigger) {
  return {
      {"id", trigger.id},
      {"delivery", trigger.delivery},
      {"repository", trigger.repository},
      {"event", trigger.event},
      {"ref", trigger.ref},
      {"sha", trigger.sha},
      {"sender", trigger.sender},
      {"status", store::to_string(trigger.status)},
      {"message", trigger.message},
      {"run_ids", trigger.run_ids.is_array() ? json::parse(trigger.run_ids.dump()) : json::array()},
      {"rerun", json::parse(trigger.rerun.dump())},
      // A bisection's request (bisect.h), null for other triggers.
      {"bisect", trigger.event == "bisect" ? json::parse(trigger.payload.dump()) : json(nullptr)},
      {"created_at", trigger.created_at},
      {"updated_at", trigger.updated_at}};
}

json to_json(int index, const engine::GpuState& state) {
  static constexpr const char* k_kinds[] = {"free", "leased", "busy", "quarantined"};
  return {{"index", index},
          {"state", k_kinds[static_cast<int>(state.kind)]},
          {"detail", state.detail},
          {"since", state.since}};
}

}  // namespace kiln::server
