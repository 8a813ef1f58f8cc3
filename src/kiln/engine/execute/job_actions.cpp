// A job's action steps (job_run.h): local, mirrored and built-in actions, their post steps and
// artifacts, and the ActionHost that action_runner.h runs them through.

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "kiln/engine/execute/job_run.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {

exec::ActionContext JobRun::action_context(const core::Environment& env) {
  exec::ActionContext context;
  context.workspace = workspace_;
  context.repository = setup_.repo->root;
  // The event's commit; when that is HEAD and the work tree has uncommitted changes, the
  // snapshot of the work tree (repository.h: the working copy runs).
  context.sha = !setup_.repo->work_tree_sha.empty() && setup_.event->sha == setup_.repo->head_sha
                    ? setup_.repo->work_tree_sha
                    : setup_.event->sha;
  context.ref = setup_.event->ref;
  context.artifact_root = setup_.artifact_root;
  context.cache_root = setup_.kiln_dir / "cache";
  context.log = [this](std::string_view line) { log_line("output", setup_.masker->mask(line)); };
  context.env = env;
  context.run_as = run_as_;
  return context;
}

Result<JobRun::PreparedAction> JobRun::prepare_action(const workflow::Step& step,
                                                      const core::Environment& env) {
  PreparedAction prepared;
  prepared.env = env;
  ActionCall& call = prepared.call;
  call.uses = step.uses->value;
  call.where = step.uses->where;
  call.step_name = default_step_name(step);
  const std::string& uses = call.uses;
  KILN_TRY(auto with_texts, workflow::expand_mapping(step.with, context_, "with"));
  for (const auto& [key, text] : with_texts) {
    KILN_TRY(auto value, expr::interpolate(text.value, context_, text.where));
    call.with[key] = value;
  }
  prepared.file_action =
      uses.starts_with("./") || uses.starts_with("docker://") ||
      ((references_.mirror || references_.fetch) && !exec::is_builtin_action(uses));
  if (prepared.file_action) {
    // Local actions, actions of the mirror and Docker images (action_runner.h).
    if (auto step_env = workflow::expand_mapping(step.env, context_, "env"))
      for (const auto& [key, text] : *step_env)
        if (auto it = env.find(key); it != env.end()) call.env[key] = it->second;
    return prepared;
  }
  if (!exec::is_builtin_action(uses))
    return fail(ErrorCode::unsupported, "{}: {}", step.uses->where.to_string(),
                exec::unavailable_action_message(uses));
  // An artifact's name becomes a directory, a store record, an API listing and a download's
  // file name, none of which may hold a secret (and "***" is no valid name): refused.
  if (uses.starts_with("actions/upload-artifact"))
    if (auto name = call.with.find("name");
        name != call.with.end() && setup_.masker->mask(name->second) != name->second)
      return fail(ErrorCode::invalid_input,
                  "{}: the artifact name '{}' holds a secret; artifact names are stored and "
                  "shown: choose one without",
                  step.uses->where.to_string(), setup_.masker->mask(name->second));
  return prepared;
}

ActionOutcome JobRun::run_prepared_action(ActionHost& host, const PreparedAction& action) {
  if (action.file_action) return run_action(host, action.call);
  ActionOutcome outcome;
  outcome.conclusion =
      host.run_builtin(action.call.uses, action.call.with, action.env, outcome.outputs);
  return outcome;
}

Conclusion JobRun::execute_action(const workflow::Step& step, const core::Environment& env) {
  auto prepared = prepare_action(step, env);
  if (!prepared) {
    const Error& error = prepared.error();
    log_kiln("error", error.where.empty() ? error.message : error.to_string());
    return Conclusion::failure;
  }
  auto outcome = run_prepared_action(*this, *prepared);
  for (const auto& [key, value] : outcome.outputs) raw_outputs_[key] = value;
  return outcome.conclusion;
}

core::Environment JobRun::job_environment() {
  core::Environment env = base_env_;
  for (const auto& [key, value] : job_env_) env[key] = value;
  for (const auto& [key, value] : file_env_) env[key] = value;
  return env;
}

void JobRun::finish_environment(core::Environment& env) {
  if (!path_additions_.empty()) env["PATH"] = exec::compose_path(path_additions_, env["PATH"]);
  for (const auto& [key, value] : setup_.gpu_env) env[key] = value;
}

Result<exec::StepResult> JobRun::run_process(exec::StepRequest request) {
  auto limit = step_deadline_ ? std::min(*step_deadline_, deadline_) : deadline_;
  bool step_limit = step_deadline_ && *step_deadline_ < deadline_;
  auto remaining = std::chrono::duration_cast<milliseconds>(limit - Clock::now());
  request.timeout = std::max(remaining, milliseconds(1));
  request.temp_dir = temp_dir_;
  request.job_token = token_;
  if (subreaper_) request.subreaper = &*subreaper_;
  request.run_as = run_as_;
  LogSink sink(*this);
  const exec::CancelToken* cancel = setup_.cancel->cancelled() ? nullptr : setup_.cancel;
  KILN_TRY(auto result, exec::run_step(request, sink, *setup_.masker, cancel));
  add_step_summary(result.summary);
  for (const auto& [key, value] : result.env) {
    file_env_[key] = value;
    context_.contexts["env"][key] = value;
  }
  exec::add_path_entries(path_additions_, result.path_additions);
  if (result.outcome == exec::StepOutcome::timed_out) step_end_kind_ = "timeout";
  if (result.outcome == exec::StepOutcome::timed_out && step_limit) {
    log_kiln("error", fmt::format("The step timed out after {} minutes.", step_minutes_));
  } else if (result.outcome == exec::StepOutcome::timed_out && !timed_out_) {
    timed_out_ = true;
    log_kiln("error", fmt::format("The job has exceeded its maximum execution time of {} "
                                  "minutes.",
                                  job_timeout_minutes_));
  }
  return result;
}

Conclusion JobRun::run_builtin(const std::string& uses,
                               const std::map<std::string, std::string>& with,
                               const core::Environment& env,
                               std::map<std::string, std::string>& outputs) {
  auto context = action_context(env);
  auto outcome = exec::run_builtin_action(uses, with, context);
  give_job_dir();  // a checkout, a restored cache, downloaded artifacts: the job's user's
  if (!outcome) {
    log_kiln("error", outcome.error().to_string());
    return Conclusion::failure;
  }
  for (const auto& [key, value] : outcome->outputs) outputs[key] = value;
  record_artifacts(outcome->artifacts_uploaded);
  // SARIF results (upload-sarif): the job's annotations, shown as `::error file=...` is.
  for (auto note : outcome->annotations) {
    note.message = setup_.masker->mask(note.message);
    note.title = setup_.masker->mask(note.title);
    note.file = setup_.masker->mask(note.file);
    add_annotation(note);
    std::string where = note.file.empty() ? "" : fmt::format("{}:{}: ", note.file, note.line);
    std::string rule = note.title.empty() ? "" : fmt::format(" [{}]", note.title);
    log_kiln(exec::to_string(note.level), where + note.message + rule);
  }
  if (outcome->post) queue_builtin_post(*outcome->post, env, post_actions_);
  if (!outcome->success) {
    log_kiln("error", setup_.masker->mask(outcome->error));
    return Conclusion::failure;
  }
  return Conclusion::success;
}

void JobRun::queue_builtin_post(const exec::PostAction& post, const core::Environment& env,
                                std::vector<std::function<bool()>>& posts) {
  posts.push_back([this, post, env] {
    if ((failed_ || cancelled()) && !post.always) return true;
    log_kiln("kiln", fmt::format("Post {}", post.description));
    auto result = exec::run_post_action(post, action_context(env));
    give_job_dir();
    if (!result)
      log_kiln("warning", result.error().to_string());
    else if (!result->success)
      log_kiln("warning", setup_.masker->mask(result->error));
    return true;
  });
}

expr::Context JobRun::job_context() {
  expr::Context context = context_;
  context.failed = failed_;
  context.cancelled = cancelled();
  context.contexts["job"]["status"] = failed_ ? "failure" : cancelled() ? "cancelled" : "success";
  return context;
}

void JobRun::record_artifacts(const std::vector<exec::ArtifactInfo>& artifacts) {
  for (const auto& info : artifacts) {
    store::Artifact artifact;
    artifact.run_id = setup_.run_id;
    artifact.job_id = setup_.job_row;
    artifact.name = info.name;
    artifact.path = info.path.string();
    artifact.size_bytes = static_cast<std::int64_t>(info.size);
    artifact.file_count = static_cast<std::int64_t>(info.files);
    artifact.created_at = store::now_ms();
    if (auto existing = setup_.store->find_artifact(setup_.run_id, info.name))
      (void)setup_.store->delete_artifact(existing->id);
    if (auto stored = setup_.store->create_artifact(artifact); !stored)
      log_kiln("warning", stored.error().to_string());
  }
}

}  // namespace kiln::engine
