#include "kiln/engine/execute/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/core/subprocess.h"
#include "kiln/engine/execute/debug_hold.h"
#include "kiln/engine/execute/failure_class.h"
#include "kiln/engine/execute/hash_files.h"
#include "kiln/engine/execute/job_run.h"
#include "kiln/engine/plan/contexts.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/store/process_identity.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {
namespace {

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

}  // namespace

// A file-system-safe name for a job key: "build (linux, 3.11)" → "build_linux_3.11_".
std::string JobRun::safe_name(const std::string& key) {
  std::string out;
  for (char c : key)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out.substr(0, 80);
}

JobRun::JobRun(const JobSetup& setup) : setup_(setup), job_(*setup.job) {
  references_.mirror = setup.options->actions_mirror;
  references_.fetch = setup.options->actions_fetcher;
  references_.is_builtin_action = [](std::string_view uses) {
    return exec::is_builtin_action(uses);
  };
}

// The job as the observer shows it (JobSetup::shown_key).
const std::string& JobRun::shown_key() const {
  return setup_.shown_key.empty() ? summary_.key : setup_.shown_key;
}

JobSummary JobRun::run() {
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
  setup_.recorder->start_job(setup_.job_row);
  oom_watch_ = std::make_unique<exec::OomWatch>();

  // The job boundary: parsers of what a job hands kiln return errors, so an exception here is
  // a bug. It fails this job as an infrastructure failure; the job is still cleaned up and
  // recorded, and the run (or the server) goes on.
  try {
    auto status = prepare_after_check();
    if (!status) {
      // The check's infrastructure failure as it said it; prepare()'s errors as errors.
      const std::string said =
          infrastructure_.empty() ? status.error().to_string() : status.error().message;
      log_kiln("error", said);
      failed_ = true;
      summary_.reason = said;
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
    infrastructure_ = summary_.reason;
    log_kiln("error", summary_.reason);
    stop_gpu_telemetry();
  }
  if (failed_ && !setup_.cancel->cancelled() && wants_debug_hold()) hold_for_debugging();
  clean_up();
  finish();
  return summary_;
}

// The before-job check (JobSetup::before_job), then prepare(). A problem the check found stops the
// job before its steps, as an infrastructure failure with the check's words.
Status JobRun::prepare_after_check() {
  if (setup_.before_job) {
    auto before = setup_.before_job();
    for (const auto& line : before.lines) log_kiln(line.kind, line.text);
    if (!before.problem.empty()) {
      infrastructure_ = "infrastructure failure: " + before.problem;
      return make_error(ErrorCode::io_error, infrastructure_);
    }
  }
  return prepare();
}

Status JobRun::prepare() {
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
  // Tests quarantined now stay so for the whole job (quarantine.h): its steps are judged alike.
  quarantined_ = quarantined_tests(*setup_.store, setup_.repo->name, store::now_ms());

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
  // jobs.limits: the host job's steps, and all they start, in a cgroup with those limits.
  if (const auto& limits = setup_.options->job_limits; limits.any() && !containers.container) {
    if (!subreaper_)
      return fail(ErrorCode::io_error,
                  "jobs.limits: kiln-subreaper is not beside kiln, so the job's steps cannot be "
                  "put in their cgroup; the job does not run without its limits");
    KILN_TRY(auto group, core::JobCgroup::create(setup_.options->cgroup_host, limits));
    subreaper_->set_cgroup(group.directories());
    cgroup_ = std::move(group);
    log_kiln("kiln", fmt::format("The job's processes run in a cgroup of their own ({})",
                                 limits.describe()));
  }
  // A job container has its own environment (its image's); the host's stays outside.
  if (!containers.container) base_env_ = core::current_environment();
  if (const auto& user = setup_.options->job_user; user && !containers.container) {
    // jobs.user: the job's directory is the user's, its HOME inside it; every step process is
    // switched to the user by its holder (exec/step_runner.h refuses to run one without).
    if (!subreaper_)
      return fail(ErrorCode::io_error,
                  "jobs.user '{}': kiln-subreaper is not beside kiln, so the job's steps cannot "
                  "be switched to that user; the job does not run as kiln's user instead",
                  user->name);
    if (::geteuid() != 0 && ::geteuid() != user->uid)
      return fail(ErrorCode::invalid_input,
                  "jobs.user '{}' needs kiln to run as root (it runs as UID {})", user->name,
                  ::geteuid());
    std::filesystem::create_directories(job_dir_ / "home", ec);
    // The repository kiln checks out from is root's: git run as the user refuses a repository
    // of another owner unless the user's own (global) config trusts it; trusting it exposes no
    // one but the user.
    std::ofstream(job_dir_ / "home" / ".gitconfig") << "[safe]\n\tdirectory = *\n";
    run_as_ = &*user;
    give_job_dir();
    base_env_["HOME"] = (job_dir_ / "home").string();
    base_env_["USER"] = base_env_["LOGNAME"] = user->name;
  }
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

void JobRun::give_job_dir() {
  if (!run_as_) return;
  if (auto given = core::give_to(job_dir_, *run_as_); !given)
    log_kiln("warning", given.error().message);
}

// container_job.h: services, then the job container; its PATH is the steps' base PATH.
Status JobRun::start_containers(const workflow::Job& job) {
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
  setup.owner = {std::to_string(setup_.run_id), summary_.key, self.pid, self.start_time, self.host};
  setup.cancel = setup_.cancel;
  setup.log = [this](std::string_view kind, const std::string& text) { log_kiln(kind, text); };
  containers_ = std::make_unique<ContainerJob>(std::move(setup));
  auto started = containers_->start();
  setup_.recorder->set_job_extra(setup_.job_row, JobExtra::containers, containers_->describe());
  // The engine, the pull or the container failed, not the job's steps: an infrastructure failure
  // (failure_class.h), retried where kiln.yml says so.
  if (!started) infrastructure_ = "the job's containers did not start: " + started.error().message;
  KILN_TRY_VOID(started);
  context_.contexts["job"]["container"] = containers_->container_context();
  context_.contexts["job"]["services"] = containers_->services_context();
  if (containers_->launcher() != nullptr) base_env_["PATH"] = containers_->container_path();
  return {};
}

void JobRun::refresh_env_context() {
  expr::Value env = expr::Value::object();
  for (const auto& [key, value] : job_env_) env[key] = value;
  for (const auto& [key, value] : file_env_) env[key] = value;
  context_.contexts["env"] = std::move(env);
}

Result<std::string> JobRun::hash_files(const std::vector<std::string>& patterns) {
  return engine::hash_files(workspace_, patterns);
}

// Post steps in reverse order: each decides whether it runs (post-if, save-always).
void JobRun::run_post_actions() {
  for (auto it = post_actions_.rbegin(); it != post_actions_.rend(); ++it)
    if (!(*it)()) failed_ = true;
}

bool JobRun::wants_debug_hold() const {
  const auto& options = *setup_.options;
  return options.keep_failed ||
         (options.keep_failed_on_dispatch && setup_.event->name == "workflow_dispatch");
}

// debug_hold.h: the container, workspace, processes and GPUs stay until `kiln release`, the
// hold's time or a cancel.
void JobRun::hold_for_debugging() {
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
    setup_.set_gpu_holder(
        fmt::format("held for debugging until {} ({}): {} / {} (run {})", clock_time(until),
                    commands, setup_.repo->root.filename().string(), summary_.key, setup_.run_id));
  auto end = wait_debug_hold(path, until, setup_.cancel);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  log_kiln("kiln", fmt::format("The debugging hold ended: {}", to_string(end)));
}

std::string JobRun::format_minutes(milliseconds duration) {
  auto seconds = duration.count() / 1000;
  if (seconds % 60 != 0 || seconds < 60) return fmt::format("{} s", seconds);
  return fmt::format("{} min", seconds / 60);
}

// Every process the job started is gone at its end, daemons included.
void JobRun::clean_up() {
  if (containers_) containers_->stop();
  // The holders kill what the steps left (whatever it did to its environment or session);
  // the token scan then finds anything that escaped them.
  if (subreaper_)
    for (const auto& description : subreaper_->end())
      log_kiln("kiln", fmt::format("Cleaning up: killed leftover process {}", description));
  // Whatever is still in the job's cgroup (a process that killed its holder) goes too.
  if (cgroup_) {
    cgroup_oom_kills_ = cgroup_->oom_kills();
    for (const auto& description : cgroup_->kill_all())
      log_kiln("kiln", fmt::format("Cleaning up: killed leftover process {} (in the job's cgroup)",
                                   description));
    cgroup_->remove();
  }
  auto killed = exec::kill_job_processes(token_);
  if (!killed)
    log_kiln("warning", killed.error().to_string());
  else
    for (const auto& description : *killed)
      log_kiln("kiln", fmt::format("Cleaning up: killed leftover process {}", description));
  if (setup_.after_job) {
    after_job_ = setup_.after_job();
    for (const auto& line : after_job_.lines) log_kiln(line.kind, line.text);
  }
  if (!setup_.options->keep_workspaces) {
    std::error_code ec;
    std::filesystem::remove_all(job_dir_, ec);
  }
}

void JobRun::finish() {
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
  withdraw_excuse_if_unsafe();
  // A job that ran out of time failed, whether or not a step was running then.
  bool was_cancelled = setup_.cancel->cancelled() && !timed_out_;
  summary_.conclusion = was_cancelled           ? Conclusion::cancelled
                        : failed_ || timed_out_ ? Conclusion::failure
                                                : Conclusion::success;
  if (timed_out_ && summary_.reason.empty())
    summary_.reason = fmt::format("the job exceeded its maximum execution time of {} minutes",
                                  job_timeout_minutes_);
  summary_.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
  report_dropped_lines();
  classify();
  flush_log();
  // Every line in the store before the job is: a reader never sees a finished job's log cut.
  if (log_) {
    if (auto closed = log_->close(); !closed && !store_warned_) {
      store_warned_ = true;
      setup_.observer->job_line(summary_.key, "warning",
                                "cannot write the log to the store: " + closed.error().to_string());
    }
  }
  JobResult result{.conclusion = summary_.conclusion,
                   .message = summary_.reason,
                   .outputs = nlohmann::json::object(),
                   .failure_class = summary_.failure_class,
                   .failure_evidence = summary_.failure_evidence};
  for (const auto& [key, value] : summary_.outputs) result.outputs[key] = value;
  // $GITHUB_STEP_SUMMARY of every step, in order (masked): `kiln report`, the dashboard.
  if (!step_summary_.empty()) result.extras.emplace_back(JobExtra::step_summary, step_summary_);
  summary_.step_summary = step_summary_;
  // For `kiln report`: the granted GPUs and the job's test totals.
  if (!setup_.gpus.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : setup_.gpus)
      gpus.push_back(
          {{"index", g.index}, {"uuid", g.uuid}, {"model", g.model}, {"driver", g.driver_version}});
    result.extras.emplace_back(JobExtra::gpus, std::move(gpus));
  }
  if (!test_totals_.is_null()) result.extras.emplace_back(JobExtra::tests, test_totals_);
  {
    std::lock_guard lock(log_mutex_);
    if (!annotations_.empty()) result.extras.emplace_back(JobExtra::annotations, annotations_);
  }
  if (summary_.log_dropped_lines > 0)
    result.extras.emplace_back(JobExtra::log_dropped,
                               nlohmann::json{{"lines", summary_.log_dropped_lines},
                                              {"bytes", summary_.log_dropped_bytes},
                                              {"limit", setup_.options->max_log_bytes}});
  setup_.recorder->finish_job(setup_.job_row, result);
}

void JobRun::classify() {
  FailureSignals signals;
  signals.conclusion = summary_.conclusion;
  signals.stop = stop_reason_of(summary_);
  signals.failure = summary_.failure ? &*summary_.failure : nullptr;
  signals.gpu_faults = after_job_.gpu_faults;
  signals.gpu_busy = after_job_.gpu_busy;
  // The job's own memory limit (jobs.limits) is evidence the kernel log need not be read for.
  if (cgroup_oom_kills_ > 0)
    signals.oom_kills.push_back(
        fmt::format("the job's cgroup reached its memory limit ({}): {} process{} OOM-killed",
                    setup_.options->job_limits.describe(), cgroup_oom_kills_,
                    cgroup_oom_kills_ == 1 ? "" : "es"));
  if (oom_watch_)
    for (const auto& kill : oom_watch_->kills()) signals.oom_kills.push_back(kill);
  signals.infrastructure = infrastructure_;
  signals.excused_tests = excused_tests_;
  auto verdict = classify_failure(signals);
  summary_.failure_class = verdict.failure_class;
  summary_.failure_evidence = std::move(verdict.evidence);
  if (verdict.failure_class == FailureClass::none) return;
  log_kiln("kiln", fmt::format("Failure class: {}: {}", store::to_string(verdict.failure_class),
                               summary_.failure_evidence));
  // Without the kernel log, a step killed by SIGKILL cannot be told an OOM kill: say why.
  if (verdict.failure_class == FailureClass::code && oom_watch_ && !oom_watch_->readable() &&
      summary_.failure && summary_.failure->exit_code == 137)
    log_kiln("kiln", fmt::format("(whether the kernel killed it for memory is not known: {})",
                                 oom_watch_->unreadable_reason()));
}

JobSummary fail_job(const JobSetup& setup, const std::string& reason) {
  JobSummary summary;
  summary.key = setup.instance.key;
  summary.job_id = setup.job->id;
  summary.name = setup.instance.name;
  summary.store_id = setup.job_row;
  summary.matrix = setup.instance.matrix;
  summary.labels = setup.labels;
  summary.conclusion = Conclusion::failure;
  summary.reason = reason;
  summary.failure_class = FailureClass::infra;
  summary.failure_evidence = reason;
  setup.observer->job_line(summary.key, "error", summary.reason);
  setup.recorder->finish_job(setup.job_row, {.conclusion = Conclusion::failure,
                                             .message = summary.reason,
                                             .failure_class = summary.failure_class,
                                             .failure_evidence = summary.failure_evidence});
  return summary;
}

void set_job_spec(JobSetup& setup, const JobSpec& spec) {
  setup.workflow = &spec.workflow;
  setup.triggered = &spec.triggered;
  setup.job = spec.workflow.workflow.find_job(spec.job_id);
  setup.run_id = spec.run_id;
  setup.run_number = spec.run_number;
  setup.run_attempt = spec.run_attempt;
  setup.job_row = spec.job_row;
  setup.instance = spec.instance;
  setup.shown_key = spec.shown_key;
  setup.labels = spec.labels;
  setup.contexts = spec.contexts;
  setup.workflow_env = spec.workflow_env;
  setup.gpu_env = spec.gpu_env;
  setup.job_token = spec.job_token;
  setup.gpus = spec.gpus;
  setup.gpu_memory_budget_mib = spec.gpu_memory_budget_mib;
  setup.artifact_root = spec.artifact_root;
}

JobSummary run_job(const JobSetup& setup) {
  try {
    JobRun job(setup);
    return job.run();
  } catch (const std::exception& e) {
    // Escaped the clean-up or the recording of the job: record what can be recorded.
    return fail_job(setup, infrastructure_failure(e));
  }
}

}  // namespace kiln::engine
