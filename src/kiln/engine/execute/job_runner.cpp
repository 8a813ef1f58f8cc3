#include "kiln/engine/execute/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/core/subprocess.h"
#include "kiln/engine/collect/gpu_telemetry.h"
#include "kiln/engine/collect/test_results.h"
#include "kiln/engine/execute/action_runner.h"
#include "kiln/engine/execute/container_job.h"
#include "kiln/engine/execute/debug_hold.h"
#include "kiln/engine/execute/hash_files.h"
#include "kiln/engine/gate/benchmarks.h"
#include "kiln/engine/plan/contexts.h"
#include "kiln/exec/actions.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/exec/step_runner.h"
#include "kiln/store/process_identity.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int k_default_job_timeout_minutes = 360;

// A file-system-safe name for a job key: "build (linux, 3.11)" → "build_linux_3.11_".
std::string safe_name(const std::string& key) {
  std::string out;
  for (char c : key)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out.substr(0, 80);
}

store::LogStream stream_of(std::string_view kind) {
  if (kind == "output") return store::LogStream::out;
  if (kind == "stderr") return store::LogStream::err;
  return store::LogStream::system;
}

// GitHub's raw log markers for lines that are not plain output.
std::string stored_text(std::string_view kind, std::string_view text) {
  if (kind == "output" || kind == "stderr") return std::string(text);
  if (kind == "kiln") return std::string(text);
  return fmt::format("##[{}]{}", kind, text);
}

// Parses "10", "2.5" or an expression's value as minutes; 0 when absent.
Result<double> minutes_of(const std::optional<workflow::Text>& text, const expr::Context& context) {
  if (!text) return 0.0;
  KILN_TRY(auto value, expr::evaluate_template(text->value, context, text->where));
  return parse_timeout_minutes(expr::to_text(value), text->where);
}

Result<bool> flag_of(const std::optional<workflow::Text>& text, const expr::Context& context) {
  if (!text) return false;
  return evaluate_flag(*text, context);
}

// KILN_TEST_THROW_IN_JOB=ID: job ID throws as an escaped library exception would, before its
// steps, so that tests/integration/robust_test.sh sees the job boundary through the real binary.
void throw_if_injected(const std::string& job_id) {
  const char* id = std::getenv("KILN_TEST_THROW_IN_JOB");
  if (id != nullptr && job_id == id)
    throw std::runtime_error("KILN_TEST_THROW_IN_JOB: an exception kiln did not expect");
}

std::string infrastructure_failure(const std::exception& e) {
  return fmt::format(
      "infrastructure failure: {} (a bug in kiln; the job was stopped, the run "
      "goes on)",
      e.what());
}

// Everything one job instance needs while its steps run.
class JobRun : public ActionHost {
 public:
  explicit JobRun(const JobSetup& setup) : setup_(setup), job_(*setup.job) {
    references_.mirror = setup.options->actions_mirror;
    references_.fetch = setup.options->actions_fetcher;
    references_.is_builtin_action = [](std::string_view uses) {
      return exec::is_builtin_action(uses);
    };
  }

  // The job as the observer shows it (JobSetup::shown_key).
  const std::string& shown_key() const {
    return setup_.shown_key.empty() ? summary_.key : setup_.shown_key;
  }

  JobSummary run() {
    if (auto writer = setup_.store->open_log_writer(setup_.job_row)) {
      log_ = std::move(*writer);
    } else {
      store_warned_ = true;  // each line is then committed on its own: slower, as durable
      setup_.observer->job_line(summary_.key, "warning", writer.error().to_string());
    }
    started_ = Clock::now();
    summary_.key = setup_.instance.key;
    summary_.job_id = job_.id;
    summary_.name = setup_.instance.name;
    summary_.store_id = setup_.job_row;
    summary_.matrix = setup_.instance.matrix;
    summary_.labels = setup_.labels;
    (void)setup_.store->set_job_status(setup_.job_row, store::JobStatus::running, store::now_ms());

    // The job boundary: parsers of what a job hands kiln return errors, so an exception here is
    // a bug. It fails this job as an infrastructure failure; the job is still cleaned up and
    // recorded, and the run (or the server) goes on.
    try {
      auto status = prepare();
      if (!status) {
        log_kiln("error", status.error().to_string());
        failed_ = true;
        summary_.reason = status.error().to_string();
      } else {
        start_gpu_telemetry();
        throw_if_injected(job_.id);
        run_steps();
        run_post_actions();
        stop_gpu_telemetry();  // before clean_up kills what is left: that is a leak
        collect_tests();
        gate_benchmarks();
      }
    } catch (const std::exception& e) {
      failed_ = true;
      summary_.reason = infrastructure_failure(e);
      log_kiln("error", summary_.reason);
      stop_gpu_telemetry();
    }
    if (failed_ && !setup_.cancel->cancelled() && wants_debug_hold()) hold_for_debugging();
    clean_up();
    finish();
    return summary_;
  }

 private:
  Status prepare() {
    // The job's own directory: keys are unique in a run, but their file-system-safe names may
    // not be ("a b" and "a_b"): a name another job of the run already has gets the job's row id.
    auto run_dir = setup_.kiln_dir / "work" / std::to_string(setup_.run_id);
    std::error_code ec;
    std::filesystem::create_directories(run_dir, ec);
    job_dir_ = run_dir / safe_name(summary_.key);
    if (!std::filesystem::create_directory(job_dir_, ec) && !ec)
      job_dir_ = run_dir / fmt::format("{}-{}", safe_name(summary_.key), setup_.job_row);
    workspace_ = job_dir_ / "workspace";
    temp_dir_ = job_dir_ / "temp";
    for (const auto& dir : {workspace_, temp_dir_, setup_.kiln_dir / "tool-cache"}) {
      std::filesystem::create_directories(dir, ec);
      if (ec)
        return make_error(ErrorCode::io_error,
                          fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    }
    // As on GitHub, `uses: ./path` names a file of the workspace (actions/checkout first).
    references_.repository = workspace_;
    auto event_path = job_dir_ / "event.json";
    std::ofstream(event_path) << setup_.event->payload.dump(2);
    benchmarks_file_ = job_dir_ / "benchmarks.txt";
    std::ofstream{benchmarks_file_};
    benchmarks_.emplace(*setup_.store, benchmark_context());
    test_results_file_ = job_dir_ / "test-results.txt";
    std::ofstream{test_results_file_};

    JobPlace place;
    place.run_id = setup_.run_id;
    place.run_number = setup_.run_number;
    place.run_attempt = setup_.run_attempt;
    const SelectedWorkflow* triggered = setup_.triggered ? setup_.triggered : setup_.workflow;
    place.workflow_name = triggered->name;
    place.workflow_path = triggered->path.string();
    place.job_id = job_.id;
    place.workspace = workspace_;
    place.temp_dir = temp_dir_;
    place.tool_cache = setup_.kiln_dir / "tool-cache";
    place.event_path = event_path;
    auto contexts = make_job_contexts(*setup_.repo, *setup_.event, place);
    if (const auto& actor = setup_.options->actor; !actor.empty()) {  // kiln run --actor
      contexts.github["actor"] = contexts.github["triggering_actor"] = actor;
      contexts.env["GITHUB_ACTOR"] = contexts.env["GITHUB_TRIGGERING_ACTOR"] = actor;
    }

    context_.contexts = setup_.contexts;
    context_.contexts["github"] = contexts.github;
    context_.contexts["runner"] = contexts.runner;
    context_.contexts["job"] = {{"status", "success"},
                                {"container", expr::Value::object()},
                                {"services", expr::Value::object()}};
    context_.contexts["steps"] = expr::Value::object();
    context_.hash_files = [this](const std::vector<std::string>& patterns) {
      return hash_files(patterns);
    };

    token_ = setup_.job_token.empty() ? exec::new_job_token() : setup_.job_token;
    // `container:` and `services:` written as expressions, evaluated now (expand.h).
    KILN_TRY(resolved_containers_, workflow::resolve_containers(job_, context_));
    const workflow::Job& containers = resolved_containers_ ? *resolved_containers_ : job_;
    if (!exec::subreaper_program().empty()) {
      auto subreaper = exec::JobSubreaper::start(exec::subreaper_program(), job_dir_);
      if (!subreaper) return std::unexpected(subreaper.error());
      subreaper_ = std::move(*subreaper);
    }
    // A job container has its own environment (its image's); the host's stays outside.
    if (!containers.container) base_env_ = core::current_environment();
    for (const auto& [key, value] : contexts.env) base_env_[key] = value;
    base_env_["KILN_RUN_ID"] = std::to_string(setup_.run_id);
    base_env_["KILN_JOB_ID"] = summary_.key;
    base_env_["KILN_BENCHMARKS"] = benchmarks_file_.string();
    base_env_["KILN_TEST_RESULTS"] = test_results_file_.string();
    base_env_["KILN_JOB_TOKEN"] = token_;

    // workflow env < job env; each value may use the ones before it.
    for (const auto& [key, value] : setup_.workflow_env) job_env_[key] = value;
    refresh_env_context();
    KILN_TRY(auto job_env, workflow::expand_mapping(job_.env, context_, "env"));
    for (const auto& [key, text] : job_env) {
      KILN_TRY(auto value, expr::interpolate(text.value, context_, text.where));
      job_env_[key] = value;
      refresh_env_context();
    }

    KILN_TRY(double job_minutes, minutes_of(job_.timeout_minutes, context_));
    if (job_minutes == 0) job_minutes = k_default_job_timeout_minutes;
    job_timeout_minutes_ = job_minutes;
    deadline_ = started_ + milliseconds(static_cast<long long>(job_minutes * 60'000));

    if (containers.container || !containers.services.empty())
      KILN_TRY_VOID(start_containers(containers));
    if (job_.snapshot)
      log_kiln("warning",
               fmt::format("{}: the job's snapshot '{}' is not taken: kiln builds no "
                           "runner images",
                           job_.snapshot->where.to_string(), job_.snapshot->image_name.value));
    return {};
  }

  // container_job.h: services, then the job container; its PATH is the steps' base PATH.
  Status start_containers(const workflow::Job& job) {
    ContainerJobSetup setup;
    setup.job = &job;
    setup.context = &context_;
    setup.engine = setup_.options->container_engine;
    KILN_TRY(setup.pull_policy, container::parse_pull_policy(setup_.options->pull_policy));
    setup.policy = setup_.options->container_policy;
    setup.job_dir = job_dir_;
    setup.tool_cache = setup_.kiln_dir / "tool-cache";
    setup.workspace = workspace_;
    setup.gpus = setup_.gpus;
    setup.simulated_gpus = setup_.options->simulate_gpus.has_value();
    auto self = store::current_process();
    setup.owner = {std::to_string(setup_.run_id), summary_.key, self.pid, self.start_time,
                   self.host};
    setup.cancel = setup_.cancel;
    setup.log = [this](std::string_view kind, const std::string& text) { log_kiln(kind, text); };
    containers_ = std::make_unique<ContainerJob>(std::move(setup));
    auto started = containers_->start();
    if (auto row = setup_.store->get_job(setup_.job_row)) {
      row->extra["containers"] = containers_->describe();
      (void)setup_.store->update_job(*row);
    }
    KILN_TRY_VOID(started);
    context_.contexts["job"]["container"] = containers_->container_context();
    context_.contexts["job"]["services"] = containers_->services_context();
    if (containers_->launcher() != nullptr) base_env_["PATH"] = containers_->container_path();
    return {};
  }

  void refresh_env_context() {
    expr::Value env = expr::Value::object();
    for (const auto& [key, value] : job_env_) env[key] = value;
    for (const auto& [key, value] : file_env_) env[key] = value;
    context_.contexts["env"] = std::move(env);
  }

  Result<std::string> hash_files(const std::vector<std::string>& patterns);

  bool cancelled() const { return setup_.cancel->cancelled() || timed_out_; }

  void run_steps() {
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
  }

  // The perf gate (benchmarks.h): results are stored after every step, judged at the end.
  BenchmarkContext benchmark_context() const {
    const auto& event = *setup_.event;
    std::string branch = event.is_branch()         ? event.ref_name()
                         : !event.head_ref.empty() ? event.head_ref
                                                   : event.ref;
    return {.repository = setup_.repo->name,
            .branch = branch,
            .default_branch = setup_.repo->default_branch,
            .commit = event.sha,
            .testbed = make_testbed(setup_.labels, setup_.gpus),
            .run_id = setup_.run_id,
            .job_id = setup_.job_row};
  }
  void collect_benchmarks() {
    for (const auto& [kind, text] : benchmarks_->collect(benchmarks_file_, workspace_)) {
      log_kiln(kind, text);
      if (kind == "error") failed_ = true;
    }
  }
  // JUnit XML the steps wrote (test_results.h): read once, after the last step.
  void collect_tests() {
    auto outcome = collect_test_results(
        *setup_.store, {setup_.repo->name, setup_.event->sha, setup_.run_id, setup_.job_row},
        test_results_file_, workspace_);
    for (const auto& [kind, text] : outcome.lines) log_kiln(kind, text);
    test_totals_ = std::move(outcome.totals);
  }
  void gate_benchmarks() {
    auto verdict = benchmarks_->gate(job_env_);
    summary_.perf = verdict.report;
    for (const auto& [kind, text] : verdict.lines) log_kiln(kind, text);
    if (verdict.failed) {
      failed_ = true;
      summary_.reason = verdict.reason;
      if (!summary_.failure) summary_.failure = StepFailure{.kind = "gate"};
    }
  }

  // The job's action steps as run_pre_steps sees them when the job starts.
  std::vector<ActionCall> pre_step_calls() {
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
        if (auto value = expr::interpolate(text.value, context_, text.where))
          call.with[key] = *value;
    }
    return calls;
  }

  void run_step(const workflow::Step& step) {
    StepSummary result;
    result.index = step.index;
    if (step.id) result.id = step.id->value;
    current_step_ = step.index;

    context_.failed = failed_;
    context_.cancelled = cancelled();
    context_.contexts["job"]["status"] = failed_       ? "failure"
                                         : cancelled() ? "cancelled"
                                                       : "success";
    std::string condition = step.if_condition ? step.if_condition->value : "success()";
    SourceLocation where = step.if_condition ? step.if_condition->where : step.where;
    auto should_run = expr::evaluate_condition(condition, context_, where);

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
    } else {
      // The step's name heads its output on the terminal; the store has it in the step row.
      setup_.observer->job_line(shown_key(), "kiln", fmt::format("▶ {}", result.name));
      outcome = execute(step, result);
    }
    result.outcome = outcome;
    result.conclusion = outcome;
    if (outcome == Conclusion::failure) {
      auto continue_on_error = flag_of(step.continue_on_error, context_);
      if (continue_on_error && *continue_on_error) result.conclusion = Conclusion::success;
    }
    if (result.conclusion == Conclusion::failure) failed_ = true;
    if (outcome == Conclusion::cancelled) failed_ = true;
    if ((result.conclusion == Conclusion::failure || outcome == Conclusion::cancelled) &&
        !summary_.failure)
      record_failure(result, outcome);
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
    row.finished_at = store::now_ms();
    row.outputs = nlohmann::json::object();
    for (const auto& [key, value] : result.outputs) row.outputs[key] = value;
    if (row.id) (void)setup_.store->update_step(row);
    summary_.steps.push_back(std::move(result));
    current_step_.reset();
  }

  // A step's $GITHUB_STEP_SUMMARY (masked by the step runner), appended to the job's summary as
  // GitHub shows one job summary made of its steps' summaries.
  void add_step_summary(const std::string& markdown) {
    if (markdown.empty()) return;
    if (!step_summary_.empty() && !step_summary_.ends_with('\n')) step_summary_ += '\n';
    step_summary_ += markdown;
  }

  // The first step that failed: how it ended and its last lines, and the job's reason.
  void record_failure(const StepSummary& result, Conclusion outcome) {
    StepFailure failure;
    failure.step_index = result.index;
    failure.step = result.name;
    failure.exit_code = result.exit_code;
    failure.kind = !step_end_kind_.empty()            ? step_end_kind_
                   : outcome == Conclusion::cancelled ? "cancelled"
                   : result.exit_code != 0            ? "exit code"
                                                      : "error";
    failure.last_lines.assign(recent_lines_.begin(), recent_lines_.end());
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

  std::string default_step_name(const workflow::Step& step) const {
    if (step.uses) return "Run " + step.uses->value;
    if (step.run) {
      std::string first = step.run->value.substr(0, step.run->value.find('\n'));
      return "Run " + first;
    }
    return fmt::format("Step {}", step.index + 1);
  }

  // The environment of a step: the host's, GITHUB_*, workflow and job env, $GITHUB_ENV
  // additions, the step's env, and $GITHUB_PATH additions in front of PATH.
  Result<core::Environment> step_environment(const workflow::Step& step) {
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

  Conclusion execute(const workflow::Step& step, StepSummary& result) {
    auto saved_env_context = context_.contexts["env"];
    auto outcome = execute_inner(step, result);
    context_.contexts["env"] = saved_env_context;
    refresh_env_context();
    return outcome;
  }

  Conclusion execute_inner(const workflow::Step& step, StepSummary& result) {
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
    if (containers_) request.launcher = containers_->launcher();

    LogSink sink(*this);
    // A step that runs after the job was cancelled (if: always()) runs to its end: only its
    // timeout stops it.
    const exec::CancelToken* cancel = setup_.cancel->cancelled() ? nullptr : setup_.cancel;
    auto outcome = exec::run_step(request, sink, *setup_.masker, cancel);
    if (!outcome) {
      log_kiln("error", outcome.error().to_string());
      return Conclusion::failure;
    }
    if (outcome->exit)
      result.exit_code =
          outcome->exit->signal ? 128 + outcome->exit->signal : outcome->exit->exit_code;
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
          log_kiln("error", fmt::format("The step timed out after {} minutes.", *step_minutes));
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

  static std::optional<workflow::Text> pick(const std::optional<workflow::Text>& a,
                                            const std::optional<workflow::Text>& b,
                                            const std::optional<workflow::Text>& c) {
    if (a) return a;
    if (b) return b;
    return c;
  }

  exec::ActionContext action_context(const core::Environment& env) {
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
    return context;
  }

  Conclusion execute_action(const workflow::Step& step, const core::Environment& env) {
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
    bool file_action =
        uses.starts_with("./") || uses.starts_with("docker://") ||
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

 public:
  // ActionHost: what local and mirrored actions use of the job (action_runner.h).
  void log(std::string_view kind, const std::string& text) override { log_kiln(kind, text); }

  core::Environment job_environment() override {
    core::Environment env = base_env_;
    for (const auto& [key, value] : job_env_) env[key] = value;
    for (const auto& [key, value] : file_env_) env[key] = value;
    return env;
  }

  void finish_environment(core::Environment& env) override {
    if (!path_additions_.empty()) env["PATH"] = exec::compose_path(path_additions_, env["PATH"]);
    for (const auto& [key, value] : setup_.gpu_env) env[key] = value;
  }

  Result<exec::StepResult> run_process(exec::StepRequest request) override {
    auto limit = step_deadline_ ? std::min(*step_deadline_, deadline_) : deadline_;
    bool step_limit = step_deadline_ && *step_deadline_ < deadline_;
    auto remaining = std::chrono::duration_cast<milliseconds>(limit - Clock::now());
    request.timeout = std::max(remaining, milliseconds(1));
    request.temp_dir = temp_dir_;
    request.job_token = token_;
    if (subreaper_) request.subreaper = &*subreaper_;
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

  Conclusion run_builtin(const std::string& uses, const std::map<std::string, std::string>& with,
                         const core::Environment& env,
                         std::map<std::string, std::string>& outputs) override {
    auto context = action_context(env);
    auto outcome = exec::run_builtin_action(uses, with, context);
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

  void add_post(std::function<bool()> run) override { post_actions_.push_back(std::move(run)); }

  expr::Context job_context() override {
    expr::Context context = context_;
    context.failed = failed_;
    context.cancelled = cancelled();
    context.contexts["job"]["status"] = failed_ ? "failure" : cancelled() ? "cancelled" : "success";
    return context;
  }

  std::filesystem::path workspace() const override { return workspace_; }
  const workflow::ReferenceRoots& references() const override { return references_; }

 private:
  void record_artifacts(const std::vector<exec::ArtifactInfo>& artifacts) {
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

  // GPU telemetry (gpu_telemetry.h) while the steps run; the budget's verdict fails the job.
  void start_gpu_telemetry() {
    if (setup_.gpus.empty() || !setup_.make_sampler) return;
    JobTelemetryOptions options;
    options.sampler = setup_.make_sampler();
    if (!options.sampler) return;
    for (const auto& gpu : setup_.gpus) options.gpus.push_back(gpu.index);
    options.interval = setup_.telemetry.interval;
    options.deadline = setup_.options->gpu_health.provider_deadline;
    options.memory_budget_mib = setup_.gpu_memory_budget_mib;
    options.job_token = token_;
    options.store = setup_.store;
    options.writer.job_id = setup_.job_row;
    options.writer.gpus = setup_.gpus;
    telemetry_ = std::make_unique<JobTelemetry>(std::move(options));
  }
  void stop_gpu_telemetry() {
    if (!telemetry_) return;
    auto outcome = telemetry_->stop();
    telemetry_.reset();
    if (!outcome.sample_error.empty())
      log_kiln("warning", "GPU telemetry: " + outcome.sample_error);
    if (!outcome.store_error.empty())
      log_kiln("warning", "GPU telemetry: samples not stored: " + outcome.store_error);
    for (const auto& leak : outcome.leaks) log_kiln("warning", leak);
    if (!outcome.budget_failure.empty()) {
      log_kiln("error", outcome.budget_failure);
      failed_ = true;
      summary_.reason = outcome.budget_failure;
      if (!summary_.failure) summary_.failure = StepFailure{.kind = "gpu memory budget"};
    }
    summary_.gpu = gpu::summary_to_json(outcome.summary);
    if (auto row = setup_.store->get_job(setup_.job_row)) {
      row->extra["gpu"] = summary_.gpu;
      (void)setup_.store->update_job(*row);
    }
  }

  // Post steps in reverse order: each decides whether it runs (post-if, save-always).
  void run_post_actions() {
    for (auto it = post_actions_.rbegin(); it != post_actions_.rend(); ++it)
      if (!(*it)()) failed_ = true;
  }

  bool wants_debug_hold() const {
    const auto& options = *setup_.options;
    return options.keep_failed ||
           (options.keep_failed_on_dispatch && setup_.event->name == "workflow_dispatch");
  }

  // debug_hold.h: the container, workspace, processes and GPUs stay until `kiln release`, the
  // hold's time or a cancel.
  void hold_for_debugging() {
    DebugHold hold;
    hold.run_id = setup_.run_id;
    hold.job = summary_.key;
    if (containers_) {
      if (auto target = containers_->exec_target()) {
        hold.engine = target->first.string();
        hold.container = target->second;
      }
    }
    hold.workspace = workspace_;
    hold.env = base_env_;
    for (const auto& [key, value] : job_env_) hold.env[key] = value;
    for (const auto& [key, value] : file_env_) hold.env[key] = value;
    for (const auto& [key, value] : setup_.gpu_env) hold.env[key] = value;
    for (const auto& gpu : setup_.gpus) hold.gpus.push_back(gpu.uuid);
    const auto until = std::chrono::system_clock::now() + setup_.options->keep_failed_for;
    hold.expires_at_ms = std::chrono::duration_cast<milliseconds>(until.time_since_epoch()).count();
    auto self = store::current_process();
    hold.owner_pid = self.pid;
    hold.owner_start = self.start_time;
    auto path = debug_hold_path(setup_.kiln_dir, setup_.run_id, summary_.key);
    if (auto written = write_debug_hold(path, hold); !written) {
      log_kiln("warning",
               fmt::format("cannot keep the job for debugging: {}", written.error().to_string()));
      return;
    }
    std::string quoted = summary_.key.find_first_of(" ()',") == std::string::npos
                             ? summary_.key
                             : fmt::format("'{}'", summary_.key);
    std::string commands =
        fmt::format("kiln exec {0} {1}; kiln release {0} {1} ends it", setup_.run_id, quoted);
    std::string what = hold.container.empty() ? "workspace" : "container and workspace";
    if (!hold.gpus.empty()) what += fmt::format(" and GPU(s) {}", fmt::join(hold.gpus, ", "));
    log_kiln("kiln", fmt::format("The job failed; its {} are kept for debugging until {} ({}): {}",
                                 what, clock_time(until),
                                 format_minutes(setup_.options->keep_failed_for), commands));
    if (setup_.set_gpu_holder)
      setup_.set_gpu_holder(fmt::format(
          "held for debugging until {} ({}): {} / {} (run {})", clock_time(until), commands,
          setup_.repo->root.filename().string(), summary_.key, setup_.run_id));
    auto end = wait_debug_hold(path, until, setup_.cancel);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    log_kiln("kiln", fmt::format("The debugging hold ended: {}", to_string(end)));
  }

  static std::string format_minutes(milliseconds duration) {
    auto seconds = duration.count() / 1000;
    if (seconds % 60 != 0 || seconds < 60) return fmt::format("{} s", seconds);
    return fmt::format("{} min", seconds / 60);
  }

  // Every process the job started is gone at its end, daemons included.
  void clean_up() {
    if (containers_) containers_->stop();
    // The holders kill what the steps left (whatever it did to its environment or session);
    // the token scan then finds anything that escaped them.
    if (subreaper_)
      for (const auto& description : subreaper_->end())
        log_kiln("kiln", fmt::format("Cleaning up: killed leftover process {}", description));
    auto killed = exec::kill_job_processes(token_);
    if (!killed)
      log_kiln("warning", killed.error().to_string());
    else
      for (const auto& description : *killed)
        log_kiln("kiln", fmt::format("Cleaning up: killed leftover process {}", description));
    if (setup_.after_job)
      for (const auto& line : setup_.after_job()) log_kiln(line.kind, line.text);
    if (!setup_.options->keep_workspaces) {
      std::error_code ec;
      std::filesystem::remove_all(job_dir_, ec);
    }
  }

  void finish() {
    // Job outputs, evaluated once the steps are done.
    context_.failed = failed_;
    for (const auto& [key, text] : job_.outputs) {
      auto value = expr::interpolate(text.value, context_, text.where);
      if (!value) {
        log_kiln("warning", value.error().to_string());
        continue;
      }
      // As GitHub does: an output holding a secret is not passed on at all.
      if (setup_.masker->mask(*value) != *value) {
        log_kiln("warning", fmt::format("Skip output '{}' since it may contain secret.", key));
        continue;
      }
      summary_.outputs[key] = *value;
    }
    // A job that ran out of time failed, whether or not a step was running then.
    bool was_cancelled = setup_.cancel->cancelled() && !timed_out_;
    summary_.conclusion = was_cancelled           ? Conclusion::cancelled
                          : failed_ || timed_out_ ? Conclusion::failure
                                                  : Conclusion::success;
    if (timed_out_ && summary_.reason.empty())
      summary_.reason = fmt::format("the job exceeded its maximum execution time of {} minutes",
                                    job_timeout_minutes_);
    summary_.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
    // Every line in the store before the job is: a reader never sees a finished job's log cut.
    if (log_) {
      if (auto closed = log_->close(); !closed && !store_warned_) {
        store_warned_ = true;
        setup_.observer->job_line(
            summary_.key, "warning",
            "cannot write the log to the store: " + closed.error().to_string());
      }
    }
    if (auto row = setup_.store->get_job(setup_.job_row)) {
      row->status = summary_.conclusion == Conclusion::success     ? store::JobStatus::success
                    : summary_.conclusion == Conclusion::cancelled ? store::JobStatus::cancelled
                                                                   : store::JobStatus::failure;
      row->conclusion = summary_.conclusion;
      row->finished_at = store::now_ms();
      row->outputs = nlohmann::json::object();
      for (const auto& [key, value] : summary_.outputs) row->outputs[key] = value;
      row->message = summary_.reason;
      // $GITHUB_STEP_SUMMARY of every step, in order (masked): `kiln report`, the dashboard.
      if (!step_summary_.empty()) row->extra["step_summary"] = step_summary_;
      // For `kiln report`: the granted GPUs and the job's test totals.
      if (!setup_.gpus.empty()) {
        nlohmann::json gpus = nlohmann::json::array();
        for (const auto& g : setup_.gpus)
          gpus.push_back({{"index", g.index}, {"uuid", g.uuid}, {"model", g.model}});
        row->extra["gpus"] = std::move(gpus);
      }
      if (!test_totals_.is_null()) row->extra["tests"] = test_totals_;
      (void)setup_.store->update_job(*row);
    }
  }

 public:
  // Lines of the job's log: to the store as they come, and to the observer.
  void log_line(std::string_view kind, std::string_view text) {
    // The running step's last lines, for the failure summary (record_failure).
    if (current_step_ && setup_.options->failure_lines > 0 &&
        (kind == "output" || kind == "stderr" || kind == "error" || kind == "warning" ||
         kind == "kiln")) {
      recent_lines_.push_back(kind == "error" || kind == "warning"
                                  ? fmt::format("{}: {}", kind, text)
                                  : std::string(text));
      while (recent_lines_.size() > static_cast<size_t>(setup_.options->failure_lines))
        recent_lines_.pop_front();
    }
    store::LogLine line;
    line.job_id = setup_.job_row;
    line.step_index = current_step_;
    line.stream = stream_of(kind);
    line.text = stored_text(kind, text);
    line.time = store::now_ms();
    // Stored (durable against kill -9) before it is shown: store.h LogWriter.
    Status stored = log_ ? log_->append(line) : append_directly(line);
    if (!stored && !store_warned_) {
      store_warned_ = true;
      setup_.observer->job_line(shown_key(), "warning",
                                "cannot write the log to the store: " + stored.error().to_string());
    }
    setup_.observer->job_line(shown_key(), kind, text);
  }

  Status append_directly(const store::LogLine& line) {
    auto stored = setup_.store->append_log(line);
    if (!stored) return std::unexpected(stored.error());
    return {};
  }

  void log_kiln(std::string_view kind, const std::string& text) {
    log_line(kind, setup_.masker->mask(text));
  }

 private:
  class LogSink : public exec::LogSink {
   public:
    explicit LogSink(JobRun& job) : job_(job) {}
    void write(const exec::LogEvent& event) override {
      switch (event.kind) {
        case exec::LogKind::output:
        case exec::LogKind::command:
          job_.log_line(event.stream == core::Stream::err ? "stderr" : "output", event.text);
          break;
        case exec::LogKind::group_start:
          job_.log_line("group", event.text);
          break;
        case exec::LogKind::group_end:
          job_.log_line("endgroup", "");
          break;
        case exec::LogKind::debug:
          job_.log_line("debug", event.text);
          break;
        case exec::LogKind::system:
          job_.log_line("kiln", event.text);
          break;
        case exec::LogKind::annotation: {
          const auto& note = event.annotation;
          std::string kind = note ? std::string(exec::to_string(note->level)) : "error";
          std::string where;
          if (note && !note->file.empty())
            where = note->line ? fmt::format("{}:{}: ", note->file, note->line) : note->file + ": ";
          job_.log_line(kind, where + event.text);
          break;
        }
      }
    }

   private:
    JobRun& job_;
  };

  const JobSetup& setup_;
  const workflow::Job& job_;
  JobSummary summary_;
  Clock::time_point started_;
  Clock::time_point deadline_;
  double job_timeout_minutes_ = k_default_job_timeout_minutes;
  bool timed_out_ = false;
  bool failed_ = false;
  bool store_warned_ = false;
  std::unique_ptr<store::LogWriter> log_;  // the job's lines, batched (store.h)
  std::optional<int> current_step_;
  std::filesystem::path job_dir_, workspace_, temp_dir_, benchmarks_file_, test_results_file_;
  nlohmann::json test_totals_;
  std::optional<BenchmarkCollector> benchmarks_;
  std::string token_;
  std::optional<exec::JobSubreaper> subreaper_;
  std::unique_ptr<JobTelemetry> telemetry_;
  expr::Context context_;
  core::Environment base_env_;
  std::map<std::string, std::string> job_env_;
  std::map<std::string, std::string> file_env_;
  std::vector<std::string> path_additions_;
  std::map<std::string, std::string> raw_outputs_;  // of the step running now, unmasked
  std::deque<std::string> recent_lines_;            // of the step running now, masked
  std::string step_summary_;                        // the steps' $GITHUB_STEP_SUMMARY
  std::string step_end_kind_;  // "timeout" when the step running now ran out of time
  std::vector<std::function<bool()>> post_actions_;
  // While a step runs an action: the end of its timeout-minutes, for the action's processes.
  std::optional<Clock::time_point> step_deadline_;
  double step_minutes_ = 0;
  workflow::ReferenceRoots references_;
  std::optional<workflow::Job> resolved_containers_;  // resolve_containers' copy, if any
  std::unique_ptr<ContainerJob> containers_;          // a job with `container:` or `services:`
};

Result<std::string> JobRun::hash_files(const std::vector<std::string>& patterns) {
  return engine::hash_files(workspace_, patterns);
}

}  // namespace

JobSummary run_job(const JobSetup& setup) {
  try {
    JobRun job(setup);
    return job.run();
  } catch (const std::exception& e) {
    // Escaped the clean-up or the recording of the job: record what can be recorded.
    JobSummary summary;
    summary.key = setup.instance.key;
    summary.job_id = setup.job->id;
    summary.name = setup.instance.name;
    summary.store_id = setup.job_row;
    summary.matrix = setup.instance.matrix;
    summary.labels = setup.labels;
    summary.conclusion = Conclusion::failure;
    summary.reason = infrastructure_failure(e);
    setup.observer->job_line(summary.key, "error", summary.reason);
    if (auto row = setup.store->get_job(setup.job_row)) {
      row->status = store::JobStatus::failure;
      row->conclusion = Conclusion::failure;
      row->finished_at = store::now_ms();
      row->message = summary.reason;
      (void)setup.store->update_job(*row);
    }
    return summary;
  }
}

}  // namespace kiln::engine
