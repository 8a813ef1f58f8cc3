// An action step in the background (job_run.h, step_group.h): GitHub runs `uses:` steps in the
// background like `run:` steps. The action runs on the step's thread through BackgroundAction,
// an ActionHost of its own that lends the action what JobRun lends a step in the foreground,
// with what a step running beside others needs kept apart:
//   - its lines are the step's (stored as its own, shown after its prefix);
//   - it sees the job's environment as it was when it started, plus its own GITHUB_ENV and
//     GITHUB_PATH additions (a composite action's later steps see its earlier ones');
//   - its processes get the step's cancel token, its own temp directory and its time limit;
//   - what it leaves for the job (GITHUB_ENV, GITHUB_PATH, the step summary, artifacts, post
//     steps) is handed over only when the step is waited for, on the job's thread.
// Once the step has ended the host passes everything on to the job: a JavaScript action's post
// step, queued through it, runs at the job's end as a foreground one does.

#include <chrono>

#include <fmt/format.h>

#include "kiln/engine/execute/job_run.h"

namespace kiln::engine {

class JobRun::BackgroundAction : public ActionHost {
 public:
  BackgroundAction(JobRun& job, int index, std::string prefix,
                   std::optional<Clock::time_point> step_deadline)
      : job_(job),
        index_(index),
        prefix_(std::move(prefix)),
        env_(job.job_environment()),
        path_additions_(job.path_additions_),
        context_(job.job_context()),
        step_deadline_(step_deadline) {}

  // The step's run, on its thread: the action's conclusion as a step's result.
  Result<exec::StepResult> run(const PreparedAction& action, const exec::CancelToken& cancel,
                               const exec::StepRunnerOptions& options) {
    cancel_ = &cancel;
    options_ = options;
    auto started = Clock::now();
    auto outcome = run_prepared_action(*this, action);
    result_.outputs.clear();
    for (const auto& [key, value] : outcome.outputs) result_.outputs[key] = value;
    if (timed_out_)
      result_.outcome = exec::StepOutcome::timed_out;
    else if (outcome.conclusion != Conclusion::success && cancel.cancelled())
      result_.outcome = exec::StepOutcome::cancelled;
    else
      result_.outcome = outcome.conclusion == Conclusion::success ? exec::StepOutcome::success
                                                                  : exec::StepOutcome::failure;
    result_.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    return result_;
  }

  // On the job's thread, once the step is waited for: its artifacts and post steps become the
  // job's, and from now on the host is the job's.
  void hand_over() {
    job_.record_artifacts(artifacts_);
    for (auto& post : posts_) job_.post_actions_.push_back(std::move(post));
    posts_.clear();
    ended_ = true;
  }

  void log(std::string_view kind, const std::string& text) override {
    if (ended_) return job_.log(kind, text);
    job_.log_background_line(index_, prefix_, kind, job_.setup_.masker->mask(text));
  }

  core::Environment job_environment() override {
    if (ended_) return job_.job_environment();
    core::Environment env = env_;
    for (const auto& [key, value] : result_.env) env[key] = value;
    return env;
  }

  void finish_environment(core::Environment& env) override {
    if (ended_) return job_.finish_environment(env);
    if (!path_additions_.empty()) env["PATH"] = exec::compose_path(path_additions_, env["PATH"]);
    for (const auto& [key, value] : job_.setup_.gpu_env) env[key] = value;
  }

  Result<exec::StepResult> run_process(exec::StepRequest request) override {
    if (ended_) return job_.run_process(std::move(request));
    auto limit = step_deadline_ ? std::min(*step_deadline_, job_.deadline_) : job_.deadline_;
    auto remaining = std::chrono::duration_cast<milliseconds>(limit - Clock::now());
    request.timeout = std::max(remaining, milliseconds(1));
    request.temp_dir = job_.temp_dir_ / fmt::format("step-{}", index_);
    request.job_token = job_.token_;
    if (job_.subreaper_) request.subreaper = &*job_.subreaper_;
    request.run_as = job_.run_as_;
    JobRun::LogSink sink(job_, index_, prefix_);
    KILN_TRY(auto result, exec::run_step(request, sink, *job_.setup_.masker, cancel_, options_));
    if (!result.summary.empty()) {
      if (!result_.summary.empty() && !result_.summary.ends_with('\n')) result_.summary += '\n';
      result_.summary += result.summary;
    }
    for (const auto& [key, value] : result.env) {
      result_.env.emplace_back(key, value);  // in order: a later value wins when applied
      context_.contexts["env"][key] = value;
    }
    exec::add_path_entries(path_additions_, result.path_additions);
    result_.path_additions.insert(result_.path_additions.end(), result.path_additions.begin(),
                                  result.path_additions.end());
    if (result.outcome == exec::StepOutcome::timed_out) timed_out_ = true;
    return result;
  }

  Conclusion run_builtin(const std::string& uses, const std::map<std::string, std::string>& with,
                         const core::Environment& env,
                         std::map<std::string, std::string>& outputs) override {
    if (ended_) return job_.run_builtin(uses, with, env, outputs);
    auto context = job_.action_context(env);
    context.log = [this](std::string_view line) { log("output", std::string(line)); };
    auto outcome = exec::run_builtin_action(uses, with, context);
    job_.give_job_dir();
    if (!outcome) {
      log("error", outcome.error().to_string());
      return Conclusion::failure;
    }
    for (const auto& [key, value] : outcome->outputs) outputs[key] = value;
    artifacts_.insert(artifacts_.end(), outcome->artifacts_uploaded.begin(),
                      outcome->artifacts_uploaded.end());
    if (outcome->post) job_.queue_builtin_post(*outcome->post, env, posts_);
    if (!outcome->success) {
      log("error", outcome->error);
      return Conclusion::failure;
    }
    return Conclusion::success;
  }

  void add_post(std::function<bool()> run) override {
    if (ended_) return job_.add_post(std::move(run));
    posts_.push_back(std::move(run));
  }

  expr::Context job_context() override {
    if (ended_) return job_.job_context();
    return context_;
  }

  std::filesystem::path workspace() const override { return job_.workspace(); }
  const workflow::ReferenceRoots& references() const override { return job_.references(); }

 private:
  JobRun& job_;
  const int index_;
  const std::string prefix_;
  const core::Environment env_;  // the job's when the step started
  std::vector<std::string> path_additions_;
  expr::Context context_;
  const std::optional<Clock::time_point> step_deadline_;
  const exec::CancelToken* cancel_ = nullptr;
  exec::StepRunnerOptions options_;
  exec::StepResult result_;  // what the action's processes left for the job
  bool timed_out_ = false;
  std::vector<exec::ArtifactInfo> artifacts_;
  std::vector<std::function<bool()>> posts_;
  bool ended_ = false;  // written on the job's thread after the step's thread has ended
};

Conclusion JobRun::start_background_action(const workflow::Step& step, const StepSummary& result,
                                           const core::Environment& env, milliseconds timeout,
                                           bool step_limit, double step_minutes) {
  auto prepared = prepare_action(step, env);
  if (!prepared) {
    const Error& error = prepared.error();
    log_kiln("error", error.where.empty() ? error.message : error.to_string());
    return Conclusion::failure;
  }
  std::string label = step.id ? step.id->value : result.name;
  auto deadline = step_limit ? std::optional(Clock::now() + timeout) : std::nullopt;
  auto& host = background_actions_[step.index];
  host =
      std::make_unique<BackgroundAction>(*this, step.index, fmt::format("[{}] ", label), deadline);
  BackgroundStep& started = background_[step.index];
  started.step_limit = step_limit;
  started.minutes = step_minutes;
  step_group_.start(
      step.index, std::move(label),
      [&runner = *host, action = std::move(*prepared)](
          const exec::CancelToken& cancel, exec::LogSink&, const exec::StepRunnerOptions& options) {
        return runner.run(action, cancel, options);
      });
  return Conclusion::success;
}

void JobRun::end_background_action(int index) {
  if (auto it = background_actions_.find(index); it != background_actions_.end())
    it->second->hand_over();
}

}  // namespace kiln::engine
