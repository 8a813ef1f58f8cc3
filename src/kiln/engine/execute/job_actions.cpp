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

Conclusion JobRun::execute_action(const workflow::Step& step, const core::Environment& env) {
  const std::string& uses = step.uses->value;
  std::map<std::string, std::string> with;
  auto with_texts = workflow::expand_mapping(step.with, context_, "with");
  if (!with_texts) {
    log_kiln("error", with_texts.error().to_string());
    return Conclusion::failure;
  }
  for (const auto& [key, text] : *with_texts) {
    auto value = expr::interpolate(text.value, context_, text.where);
    if (!value) {
      log_kiln("error", value.error().to_string());
      return Conclusion::failure;
    }
    with[key] = *value;
  }
  bool file_action = uses.starts_with("./") || uses.starts_with("docker://") ||
                     ((references_.mirror || references_.fetch) && !exec::is_builtin_action(uses));
  if (file_action) {
    // Local actions, actions of the mirror and Docker images (action_runner.h).
    ActionCall call;
    call.uses = uses;
    call.where = step.uses->where;
    call.step_name = default_step_name(step);
    call.with = std::move(with);
    if (auto step_env = workflow::expand_mapping(step.env, context_, "env"))
      for (const auto& [key, text] : *step_env)
        if (auto it = env.find(key); it != env.end()) call.env[key] = it->second;
    auto outcome = run_action(*this, call);
    for (const auto& [key, value] : outcome.outputs) raw_outputs_[key] = value;
    return outcome.conclusion;
  }
  if (!exec::is_builtin_action(uses)) {
    log_kiln("error", fmt::format("{}: {}", step.uses->where.to_string(),
                                  exec::unavailable_action_message(uses)));
    return Conclusion::failure;
  }
  // An artifact's name becomes a directory, a store record, an API listing and a download's
  // file name, none of which may hold a secret (and "***" is no valid name): refused.
  if (uses.starts_with("actions/upload-artifact"))
    if (auto name = with.find("name");
        name != with.end() && setup_.masker->mask(name->second) != name->second) {
      log_kiln("error",
               fmt::format("{}: the artifact name '{}' holds a secret; artifact names "
                           "are stored and shown: choose one without",
                           step.uses->where.to_string(), setup_.masker->mask(name->second)));
      return Conclusion::failure;
    }
  std::map<std::string, std::string> outputs;
  auto conclusion = run_builtin(uses, with, env, outputs);
  for (const auto& [key, value] : outputs) raw_outputs_[key] = value;
  return conclusion;
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
  if (outcome->post)
    post_actions_.push_back([this, post = *outcome->post, env] {
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
  if (!outcome->success) {
    log_kiln("error", setup_.masker->mask(outcome->error));
    return Conclusion::failure;
  }
  return Conclusion::success;
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
