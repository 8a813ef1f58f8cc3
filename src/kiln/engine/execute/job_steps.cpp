// The job's step loop (job_run.h): each step's condition, environment, time limit and run, and
// what a failing step leaves in the job's summary.

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/engine/execute/job_run.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {

// Parses "10", "2.5" or an expression's value as minutes; 0 when absent.
Result<double> JobRun::minutes_of(const std::optional<workflow::Text>& text,
                                  const expr::Context& context) {
  if (!text) return 0.0;
  KILN_TRY(auto value, expr::evaluate_template(text->value, context, text->where));
  return parse_timeout_minutes(expr::to_text(value), text->where);
}

Result<bool> JobRun::flag_of(const std::optional<workflow::Text>& text,
                             const expr::Context& context) {
  if (!text) return false;
  return evaluate_flag(*text, context);
}

void JobRun::run_steps() {
  if ((references_.mirror || references_.fetch) &&
      run_pre_steps(*this, pre_step_calls()) != Conclusion::success)
    failed_ = true;
  for (const auto& step : job_.steps) {
    if (Clock::now() >= deadline_ && !timed_out_) {
      timed_out_ = true;
      log_kiln("error", fmt::format("The job has exceeded its maximum execution time of {} "
                                    "minutes.",
                                    job_timeout_minutes_));
    }
    run_step(step);
    collect_benchmarks();
  }
  end_step_group();
}

// The job's action steps as run_pre_steps sees them when the job starts.
std::vector<ActionCall> JobRun::pre_step_calls() {
  std::vector<ActionCall> calls;
  for (const auto& step : job_.steps) {
    if (!step.uses) continue;
    ActionCall& call = calls.emplace_back();
    call.uses = step.uses->value;
    call.where = step.uses->where;
    call.step_name = default_step_name(step);
    auto with = workflow::expand_mapping(step.with, context_, "with");
    if (!with) continue;  // the step reports it when it runs
    for (const auto& [key, text] : *with)
      if (auto value = expr::interpolate(text.value, context_, text.where)) call.with[key] = *value;
  }
  return calls;
}

void JobRun::run_step(const workflow::Step& step) {
  StepSummary result;
  result.index = step.index;
  if (step.id) result.id = step.id->value;
  current_step_ = step.index;

  context_.failed = failed_;
  context_.cancelled = cancelled();
  context_.contexts["job"]["status"] = failed_ ? "failure" : cancelled() ? "cancelled" : "success";
  std::string condition = step.if_condition ? step.if_condition->value : "success()";
  SourceLocation where = step.if_condition ? step.if_condition->where : step.where;
  // wait, wait-all and cancel always run (GitHub: they take no `if:`).
  auto should_run =
      step.is_control() ? Result<bool>(true) : expr::evaluate_condition(condition, context_, where);

  store::Step row;
  row.job_id = setup_.job_row;
  row.index = step.index;
  row.name = default_step_name(step);
  row.status = store::StepStatus::running;
  row.started_at = store::now_ms();

  auto name = step.name ? expr::interpolate(step.name->value, context_, step.name->where)
                        : Result<std::string>(row.name);
  result.name = setup_.masker->mask(name ? *name : row.name);
  row.name = result.name;
  auto step_row = setup_.store->create_step(row);
  row.id = step_row ? *step_row : 0;

  auto step_started = Clock::now();
  raw_outputs_.clear();
  recent_lines_.clear();
  step_end_kind_.clear();
  Conclusion outcome = Conclusion::success;
  if (!should_run) {
    log_kiln("error", should_run.error().to_string());
    outcome = Conclusion::failure;
  } else if (!*should_run) {
    outcome = Conclusion::skipped;
  } else if (step.is_control()) {
    setup_.observer->job_line(shown_key(), "kiln", fmt::format("▶ {}", result.name));
    outcome = step_group_.run_control(step, setup_.cancel);
    // Ending its targets made each of them the current step for a while.
    current_step_ = step.index;
    raw_outputs_.clear();
    recent_lines_.clear();
    step_end_kind_.clear();
  } else if (step.background) {
    setup_.observer->job_line(shown_key(), "kiln",
                              fmt::format("▶ {} (in the background)", result.name));
    outcome = execute(step, result, true);
    if (auto started = background_.find(step.index); started != background_.end()) {
      started->second.result = std::move(result);
      started->second.row = row;
      started->second.started = step_started;
      current_step_.reset();
      return;  // finish_background ends it
    }
  } else {
    // The step's name heads its output on the terminal; the store has it in the step row.
    setup_.observer->job_line(shown_key(), "kiln", fmt::format("▶ {}", result.name));
    if (!quarantined_.empty()) {
      step_stamps_ = stamp_result_files(test_results_file_, workspace_);
      stamped_step_ = step.index;
    }
    outcome = execute(step, result);
  }
  finish_step(step, std::move(result), row, outcome, step_started, false);
}

Conclusion JobRun::finish_step(const workflow::Step& step, StepSummary result, store::Step& row,
                               Conclusion outcome, Clock::time_point step_started,
                               bool cancelled_on_purpose) {
  result.outcome = outcome;
  result.conclusion = outcome;
  if (outcome == Conclusion::failure) {
    auto continue_on_error = flag_of(step.continue_on_error, context_);
    if (continue_on_error && *continue_on_error) result.conclusion = Conclusion::success;
  }
  if (result.conclusion == Conclusion::failure && stamped_step_ == step.index)
    excuse_quarantined(result);
  stamped_step_.reset();
  bool cancel_fails = outcome == Conclusion::cancelled && !cancelled_on_purpose;
  if (result.conclusion == Conclusion::failure || cancel_fails) failed_ = true;
  if ((result.conclusion == Conclusion::failure || cancel_fails) && !summary_.failure)
    record_failure(result, outcome);
  // A background step's run time is its own (set by finish_background), not until its wait.
  if (result.duration == milliseconds(0))
    result.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - step_started);

  // Later steps see the outputs as written; what is stored and reported is masked.
  for (const auto& [key, value] : raw_outputs_) result.outputs[key] = setup_.masker->mask(value);
  if (result.id) {
    expr::Value outputs = expr::Value::object();
    for (const auto& [key, value] : raw_outputs_) outputs[key] = value;
    context_.contexts["steps"][*result.id] = {
        {"outputs", outputs},
        {"outcome", std::string(store::to_string(result.outcome))},
        {"conclusion", std::string(store::to_string(result.conclusion))}};
  }

  row.status = result.conclusion == Conclusion::success   ? store::StepStatus::success
               : result.conclusion == Conclusion::skipped ? store::StepStatus::skipped
               : outcome == Conclusion::cancelled         ? store::StepStatus::cancelled
                                                          : store::StepStatus::failure;
  row.outcome = result.outcome;
  row.conclusion = result.conclusion;
  row.exit_code = result.exit_code;
  row.finished_at = std::min(store::now_ms(), row.started_at + result.duration.count());
  row.outputs = nlohmann::json::object();
  for (const auto& [key, value] : result.outputs) row.outputs[key] = value;
  if (row.id) (void)setup_.store->update_step(row);
  Conclusion conclusion = result.conclusion;
  summary_.steps.push_back(std::move(result));
  current_step_.reset();
  return conclusion;
}

// A step's $GITHUB_STEP_SUMMARY (masked by the step runner), appended to the job's summary as
// GitHub shows one job summary made of its steps' summaries.
void JobRun::add_step_summary(const std::string& markdown) {
  if (markdown.empty()) return;
  if (!step_summary_.empty() && !step_summary_.ends_with('\n')) step_summary_ += '\n';
  step_summary_ += markdown;
}

// The first step that failed: how it ended and its last lines, and the job's reason.
void JobRun::record_failure(const StepSummary& result, Conclusion outcome) {
  StepFailure failure = describe_failure(result, outcome);
  // A cancelled job's reason is why it was cancelled (fail-fast, concurrency, Ctrl-C): the
  // scheduler knows it.
  if (summary_.reason.empty() && failure.kind != "cancelled")
    summary_.reason =
        failure.kind == "exit code"
            ? fmt::format("step '{}' failed with exit code {}", failure.step, failure.exit_code)
        : failure.kind == "timeout" ? fmt::format("step '{}' timed out", failure.step)
                                    : fmt::format("step '{}' failed", failure.step);
  summary_.failure = std::move(failure);
}

StepFailure JobRun::describe_failure(const StepSummary& result, Conclusion outcome) const {
  StepFailure failure;
  failure.step_index = result.index;
  failure.step = result.name;
  failure.exit_code = result.exit_code;
  failure.kind = !step_end_kind_.empty()            ? step_end_kind_
                 : outcome == Conclusion::cancelled ? "cancelled"
                 : result.exit_code != 0            ? "exit code"
                                                    : "error";
  failure.last_lines.assign(recent_lines_.begin(), recent_lines_.end());
  return failure;
}

bool JobRun::excuse_quarantined(StepSummary& result) {
  // A signal (the OOM killer's SIGKILL among them), a timeout or a cancel is not a test's verdict.
  if (!step_end_kind_.empty() || cancelled() || result.exit_code <= 0 || result.exit_code >= 128)
    return false;
  auto failures = failures_since(step_stamps_, test_results_file_, workspace_, run_as_);
  if (!only_quarantined(failures.failed, quarantined_)) return false;
  if (!failures.notes.empty()) {
    log_kiln("warning", fmt::format("Only quarantined tests failed, but a result file of the step "
                                    "could not be read, so the step fails the job: {}",
                                    failures.notes.front()));
    return false;
  }
  if (!excused_failure_) excused_failure_ = describe_failure(result, Conclusion::failure);
  for (const auto& test : failures.failed)
    if (std::ranges::find(excused_tests_, test) == excused_tests_.end())
      excused_tests_.push_back(test);
  log_kiln("warning",
           fmt::format("Step '{}' exited with code {}, and only quarantined tests failed ({}): it "
                       "does not fail the job (kiln tests list)",
                       result.name, result.exit_code, fmt::join(failures.failed, ", ")));
  result.conclusion = Conclusion::success;
  return true;
}

void JobRun::withdraw_excuse_if_unsafe() {
  if (excused_tests_.empty() || failed_ || timed_out_) return;
  std::string why = !after_job_.gpu_faults.empty() ? after_job_.gpu_faults.front()
                    : !after_job_.gpu_busy.empty() ? after_job_.gpu_busy.front()
                    : oom_watch_ && !oom_watch_->kills().empty()
                        ? "the kernel killed a process for memory: " + oom_watch_->kills().front()
                        : std::string();
  if (why.empty()) return;
  log_kiln("error", fmt::format("The quarantined tests' failures are not excused: {}", why));
  failed_ = true;
  summary_.failure = excused_failure_;
  if (summary_.failure)
    summary_.reason = fmt::format("step '{}' failed with exit code {}", summary_.failure->step,
                                  summary_.failure->exit_code);
  excused_tests_.clear();
}

std::string JobRun::default_step_name(const workflow::Step& step) const {
  return step.default_name();
}

// The environment of a step: the host's, GITHUB_*, workflow and job env, $GITHUB_ENV
// additions, the step's env, and $GITHUB_PATH additions in front of PATH.
Result<core::Environment> JobRun::step_environment(const workflow::Step& step) {
  core::Environment env = base_env_;
  for (const auto& [key, value] : job_env_) env[key] = value;
  for (const auto& [key, value] : file_env_) env[key] = value;
  KILN_TRY(auto step_env, workflow::expand_mapping(step.env, context_, "env"));
  for (const auto& [key, text] : step_env) {
    KILN_TRY(auto value, expr::interpolate(text.value, context_, text.where));
    env[key] = value;
    context_.contexts["env"][key] = value;
  }
  if (!path_additions_.empty()) env["PATH"] = exec::compose_path(path_additions_, env["PATH"]);
  for (const auto& [key, value] : setup_.gpu_env) env[key] = value;
  return env;
}

Conclusion JobRun::execute(const workflow::Step& step, StepSummary& result, bool background) {
  auto saved_env_context = context_.contexts["env"];
  auto outcome = execute_inner(step, result, background);
  context_.contexts["env"] = saved_env_context;
  refresh_env_context();
  return outcome;
}

Conclusion JobRun::execute_inner(const workflow::Step& step, StepSummary& result, bool background) {
  auto env = step_environment(step);
  if (!env) {
    log_kiln("error", env.error().to_string());
    return Conclusion::failure;
  }
  auto step_minutes = minutes_of(step.timeout_minutes, context_);
  if (!step_minutes) {
    log_kiln("error", step_minutes.error().to_string());
    return Conclusion::failure;
  }
  auto remaining = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
  if (remaining <= milliseconds(0)) remaining = milliseconds(1);
  milliseconds timeout = remaining;
  bool step_limit = false;
  if (*step_minutes > 0) {
    milliseconds step_timeout(static_cast<long long>(*step_minutes * 60'000));
    if (step_timeout < timeout) {
      timeout = step_timeout;
      step_limit = true;
    }
  }

  if (step.uses && background)
    return start_background_action(step, result, *env, timeout, step_limit, *step_minutes);
  if (step.uses) {
    // The processes of an action's steps share the step's time limit (run_process).
    step_deadline_ = step_limit ? std::optional(Clock::now() + timeout) : std::nullopt;
    step_minutes_ = *step_minutes;
    auto outcome = execute_action(step, *env);
    step_deadline_.reset();
    return outcome;
  }

  auto script = expr::interpolate(step.run->value, context_, step.run->where);
  if (!script) {
    log_kiln("error", script.error().to_string());
    return Conclusion::failure;
  }
  exec::StepRequest request;
  request.script = *script;
  auto shell = pick(step.shell, job_.defaults.shell, setup_.workflow->workflow.defaults.shell);
  if (shell) {
    auto value = expr::interpolate(shell->value, context_, shell->where);
    if (!value) {
      log_kiln("error", value.error().to_string());
      return Conclusion::failure;
    }
    request.shell = *value;
  }
  auto directory = pick(step.working_directory, job_.defaults.working_directory,
                        setup_.workflow->workflow.defaults.working_directory);
  request.working_directory = workspace_;
  if (directory) {
    auto value = expr::interpolate(directory->value, context_, directory->where);
    if (!value) {
      log_kiln("error", value.error().to_string());
      return Conclusion::failure;
    }
    request.working_directory = std::filesystem::path(*value).is_absolute()
                                    ? std::filesystem::path(*value)
                                    : workspace_ / *value;
  }
  request.env = std::move(*env);
  request.temp_dir = temp_dir_;
  request.timeout = timeout;
  request.job_token = token_;
  if (subreaper_) request.subreaper = &*subreaper_;
  request.run_as = run_as_;
  if (containers_) request.launcher = containers_->launcher();

  if (background) {
    // Its own script and file-command files: steps running at once must not share them.
    request.temp_dir = temp_dir_ / fmt::format("step-{}", step.index);
    BackgroundStep& started = background_[step.index];
    started.step_limit = step_limit;
    started.minutes = *step_minutes;
    exec::Masker& masker = *setup_.masker;
    step_group_.start(step.index, step.id ? step.id->value : result.name,
                      [step_request = std::move(request), &masker](
                          const exec::CancelToken& cancel, exec::LogSink& sink,
                          const exec::StepRunnerOptions& options) {
                        return exec::run_step(step_request, sink, masker, &cancel, options);
                      });
    return Conclusion::success;
  }
  LogSink sink(*this);
  // A step that runs after the job was cancelled (if: always()) runs to its end: only its
  // timeout stops it.
  const exec::CancelToken* cancel = setup_.cancel->cancelled() ? nullptr : setup_.cancel;
  return apply_run(exec::run_step(request, sink, *setup_.masker, cancel), result, step_limit,
                   *step_minutes);
}

Conclusion JobRun::apply_run(const Result<exec::StepResult>& outcome, StepSummary& result,
                             bool step_limit, double step_minutes) {
  if (!outcome) {
    log_kiln("error", outcome.error().to_string());
    return Conclusion::failure;
  }
  if (outcome->exit)
    result.exit_code =
        outcome->exit->signal ? 128 + outcome->exit->signal : outcome->exit->exit_code;
  // The container engine failed under the step, not its process (the engine's exit code is
  // not the step's): an infrastructure failure (failure_class.h), retried where kiln.yml says.
  if (outcome->launch_failure) {
    log_kiln("error", fmt::format("The container engine failed, not the step: {}",
                                  *outcome->launch_failure));
    if (infrastructure_.empty())
      infrastructure_ = fmt::format("step '{}': {}", result.name, *outcome->launch_failure);
  }
  for (const auto& [key, value] : outcome->outputs) raw_outputs_[key] = value;
  add_step_summary(outcome->summary);
  for (const auto& [key, value] : outcome->env) file_env_[key] = value;
  exec::add_path_entries(path_additions_, outcome->path_additions);
  // The step runner has already logged why a step failed (exit code, timeout, cancel).
  switch (outcome->outcome) {
    case exec::StepOutcome::success:
      return Conclusion::success;
    case exec::StepOutcome::failure:
      return Conclusion::failure;
    case exec::StepOutcome::timed_out:
      step_end_kind_ = "timeout";
      if (step_limit) {
        log_kiln("error", fmt::format("The step timed out after {} minutes.", step_minutes));
      } else {
        timed_out_ = true;
        log_kiln("error", fmt::format("The job has exceeded its maximum execution time of {} "
                                      "minutes.",
                                      job_timeout_minutes_));
      }
      return Conclusion::failure;
    case exec::StepOutcome::cancelled:
      return Conclusion::cancelled;
  }
  return Conclusion::failure;
}

std::optional<workflow::Text> JobRun::pick(const std::optional<workflow::Text>& a,
                                           const std::optional<workflow::Text>& b,
                                           const std::optional<workflow::Text>& c) {
  if (a) return a;
  if (b) return b;
  return c;
}

}  // namespace kiln::engine
