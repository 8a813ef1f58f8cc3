// kiln run: runs the workflows an event triggers, like a local runner.

#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <fmt/chrono.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/cli/terminal.h"
#include "kiln/container/engine.h"
#include "kiln/engine/engine.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/report/report.h"
#include "kiln/store/postgres_store.h"
#include "kiln/workflow/loader.h"
#include "kiln/workflow/schedule.h"

namespace kiln::cli {
namespace {

struct RunArgs {
  std::string directory = ".";
  std::string workflows;
  std::string event = "push";
  std::string event_file;
  std::string positional_event;  // `kiln run pull_request`, as act takes it
  std::vector<std::string> input_files, vars, var_files;
  std::string actor;
  bool list = false;
  std::vector<std::string> inputs, jobs, matrix, secrets, secret_files, env_files, labels;
  int max_parallel = 0;
  bool dry_run = false, json = false, verbose = false, keep_workspaces = false, keep_failed = false;
  std::string store;
  std::string simulate_gpus;
  // --pin-gpu-model/--pin-gpu-driver/--pin-gpu-uuid: engine::RunOptions::gpu_pin.
  std::vector<std::string> pin_models, pin_uuids;
  std::string pin_driver;
  std::string config;
  std::string actions_mirror;
  std::string container_engine;
  std::string pull;
};

nlohmann::ordered_json to_json(const engine::RunReport& report) {
  using json = nlohmann::ordered_json;
  json out = {
      {"exit_code", report.exit_code()}, {"runs", json::array()}, {"not_triggered", json::array()}};
  // One run's JSON: its jobs, and for an automatic retry the attempt it ran again and why.
  auto run_json = [](const engine::WorkflowRunSummary& run) {
    json jobs = json::array();
    for (const auto& job : run.jobs) {
      json steps = json::array();
      for (const auto& step : job.steps) {
        json outputs = json::object();
        for (const auto& [k, v] : step.outputs) outputs[k] = v;
        steps.push_back({{"index", step.index},
                         {"id", step.id ? json(*step.id) : json(nullptr)},
                         {"name", step.name},
                         {"outcome", store::to_string(step.outcome)},
                         {"conclusion", store::to_string(step.conclusion)},
                         {"exit_code", step.exit_code},
                         {"duration_ms", step.duration.count()},
                         {"outputs", outputs}});
      }
      json outputs = json::object();
      for (const auto& [k, v] : job.outputs) outputs[k] = v;
      json failure = nullptr;
      if (job.failure)
        failure = {{"step", job.failure->step.empty() ? json(nullptr) : json(job.failure->step)},
                   {"step_index",
                    job.failure->step.empty() ? json(nullptr) : json(job.failure->step_index)},
                   {"kind", job.failure->kind},
                   {"exit_code", job.failure->exit_code},
                   {"last_lines", job.failure->last_lines}};
      jobs.push_back(
          {{"key", job.key},
           {"job", job.job_id},
           {"name", job.name},
           {"conclusion", store::to_string(job.conclusion)},
           {"reason", job.reason},
           {"failure", failure},
           {"failure_class", job.failure_class == store::FailureClass::none
                                 ? json(nullptr)
                                 : json(std::string(store::to_string(job.failure_class)))},
           {"failure_evidence", job.failure_evidence},
           {"order", job.order},
           {"duration_ms", job.duration.count()},
           {"queue", report::queue_json(job.queue)},
           {"log_dropped_lines", job.log_dropped_lines},
           {"log_dropped_bytes", job.log_dropped_bytes},
           {"matrix", job.matrix},
           {"labels", job.labels},
           {"outputs", outputs},
           {"steps", steps},
           {"perf", job.perf},
           {"gpu", job.gpu}});
    }
    return json{{"id", run.run_id},
                {"workflow", run.workflow_path.string()},
                {"name", run.workflow_name},
                {"conclusion", store::to_string(run.conclusion)},
                {"attempt", run.attempt},
                {"retry_of", run.retry_of == 0 ? json(nullptr) : json(run.retry_of)},
                {"retry_reason", run.retry_reason},
                {"duration_ms", run.duration.count()},
                {"jobs", jobs}};
  };
  for (const auto& run : report.runs) out["runs"].push_back(run_json(run));
  // Earlier attempts of the runs retried automatically (docs/failures.md), oldest first.
  out["retried"] = json::array();
  for (const auto& run : report.retried) out["retried"].push_back(run_json(run));
  for (const auto& [workflow, reason] : report.not_triggered)
    out["not_triggered"].push_back({{"workflow", workflow}, {"reason", reason}});
  return out;
}

// Dotenv `files`, then `pairs` (K=V, which win) into `into`; with `from_environment`, a pair
// without '=' names an environment variable whose value it takes (kept out of argv).
Status add_values(const std::vector<std::string>& files, const std::vector<std::string>& pairs,
                  const std::string& flag, bool from_environment,
                  std::map<std::string, std::string>& into) {
  for (const auto& file : files) {
    KILN_TRY(auto values, read_dotenv(file));
    for (auto& [k, v] : values) into[k] = v;
  }
  for (const auto& pair : pairs) {
    if (from_environment && pair.find('=') == std::string::npos) {
      const char* value = std::getenv(pair.c_str());
      if (!value)
        return make_error(ErrorCode::invalid_input,
                          fmt::format("{} {}: no such environment variable", flag, pair));
      into[pair] = value;
      continue;
    }
    KILN_TRY(auto kv, split_assignment(pair, flag));
    into[kv.first] = kv.second;
  }
  return {};
}

Result<engine::RunOptions> make_options(const RunArgs& args) {
  engine::RunOptions options;
  std::error_code ec;
  if (!std::filesystem::is_directory(args.directory, ec))
    return make_error(ErrorCode::invalid_input,
                      fmt::format("-C {}: no such directory", args.directory));
  if (!args.simulate_gpus.empty() && !std::filesystem::is_regular_file(args.simulate_gpus, ec))
    return make_error(ErrorCode::invalid_input,
                      fmt::format("--simulate-gpus {}: no such file", args.simulate_gpus));
  options.repository = args.directory;
  if (!args.workflows.empty()) options.workflows = args.workflows;
  options.event_name = args.event;
  if (!args.positional_event.empty()) {
    if (args.event != "push" && args.event != args.positional_event)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("the event is given twice: '{}' and --event {}",
                                    args.positional_event, args.event));
    options.event_name = args.positional_event;
  }
  if (!args.event_file.empty()) options.event_file = args.event_file;
  // Dotenv files first, then K=V flags, which win: --input-file/--input, --secret-file/--secret
  // (`--secret NAME` takes NAME's value from the environment), --var-file/--var (`vars`).
  KILN_TRY_VOID(add_values(args.input_files, args.inputs, "--input", false, options.inputs));
  options.job_filter = args.jobs;
  for (const auto& filter : args.matrix) {
    KILN_TRY(auto kv, split_assignment(filter, "--matrix"));
    options.matrix_filter.push_back(kv);
  }
  KILN_TRY_VOID(add_values(args.secret_files, args.secrets, "--secret", true, options.secrets));
  KILN_TRY_VOID(add_values(args.var_files, args.vars, "--var", false, options.vars));
  options.actor = args.actor;
  KILN_TRY_VOID(add_values(args.env_files, {}, "--env-file", false, options.extra_env));
  if (args.max_parallel < 0)
    return make_error(ErrorCode::invalid_input, "--max-parallel must be at least 1");
  options.max_parallel = args.max_parallel;
  if (!args.store.empty()) options.store_path = args.store;
  if (!args.simulate_gpus.empty()) options.simulate_gpus = args.simulate_gpus;
  if (!args.pin_models.empty() || !args.pin_uuids.empty() || !args.pin_driver.empty())
    options.gpu_pin = engine::RunOptions::GpuPin{
        .models = args.pin_models, .driver = args.pin_driver, .uuids = args.pin_uuids};
  options.keep_workspaces = args.keep_workspaces;
  KILN_TRY_VOID(apply_host_config(args.config, options));
  // --keep-failed, else KILN_KEEP_ON_FAILURE=1|true|yes.
  options.keep_failed = args.keep_failed;
  if (const char* keep = std::getenv("KILN_KEEP_ON_FAILURE"); keep && *keep && !args.keep_failed) {
    std::string_view value = keep;
    if (value == "1" || value == "true" || value == "yes")
      options.keep_failed = true;
    else if (value != "0" && value != "false" && value != "no")
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("KILN_KEEP_ON_FAILURE={}: expected 1, true, yes, 0, false or no", value));
  }
  KILN_TRY_VOID(apply_label_flags(args.labels, options));
  KILN_TRY(options.actions_mirror, actions_mirror(args.actions_mirror));
  // --container-engine, else $KILN_CONTAINER_ENGINE, else kiln.yml's containers.engine.
  if (!args.container_engine.empty()) {
    options.container_engine = args.container_engine;
  } else if (const char* engine = std::getenv("KILN_CONTAINER_ENGINE"); engine && *engine) {
    options.container_engine = engine;
  }
  if (!options.container_engine.empty() && options.container_engine != "auto" &&
      options.container_engine != "podman" && options.container_engine != "docker" &&
      options.container_engine.find('/') == std::string::npos)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("--container-engine {}: expected podman, docker, auto or a path",
                                  options.container_engine));
  if (!args.pull.empty()) {  // --pull, else kiln.yml's containers.pull, else missing
    KILN_TRY_VOID(container::parse_pull_policy(args.pull));
    options.pull_policy = args.pull;
  }
  return options;
}

// The signal that cancelled the run: kiln then exits with 128 + it (130 for Ctrl-C), as shells
// report a command a signal ended.
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal) {
  g_signal = signal;
  engine::request_cancel();
}

// --list, after the jobs: each `on.schedule` line of the workflows with its zone and next fire
// times (what `kiln serve`'s clock will run), whatever the event.
int list_schedules(const engine::RunOptions& options) {
  namespace fs = std::filesystem;
  auto files = workflow::discover_workflows(
      options.workflows.value_or(options.repository / ".github" / "workflows"));
  if (!files) return 0;  // the plan above has said what is wrong with them
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  for (const fs::path& file : *files) {
    std::error_code ec;
    fs::path shown = fs::relative(file, options.repository, ec);
    if (ec || shown.empty() || shown.native().starts_with("..")) shown = file;
    auto loaded = workflow::load_workflow_file(file, shown);
    if (!loaded.workflow) continue;
    auto schedules = workflow::schedules_of(*loaded.workflow);
    if (!schedules) return report_error(schedules.error());
    for (const auto& schedule : *schedules) {
      std::string times;
      for (const auto& at : workflow::next_fire_times(schedule, now, 3))
        times += fmt::format("{}{:%Y-%m-%d %H:%M} UTC", times.empty() ? "" : ", ", at);
      fmt::print("schedule  {}  '{}'  {}: next {}\n", shown.string(), schedule.cron,
                 schedule.zone_name(), times.empty() ? "never" : times);
    }
  }
  return 0;
}

// --list: the jobs the event would run, one line each (act's -l).
int list_jobs(const engine::RunOptions& options) {
  auto plan = engine::plan_json(options);
  if (!plan) return report_error(plan.error());
  std::vector<std::array<std::string, 4>> rows = {{"WORKFLOW", "JOB", "NEEDS", "RUNS-ON"}};
  for (const auto& wf : (*plan)["workflows"])
    for (const auto& job : wf["jobs"]) {
      std::string needs, runs_on;
      for (const auto& need : job["needs"])
        needs += (needs.empty() ? "" : ", ") + need.get<std::string>();
      for (const auto& label : job["runs_on"])
        runs_on += (runs_on.empty() ? "" : ", ") + label.get<std::string>();
      rows.push_back({wf["workflow"].get<std::string>(), job["id"].get<std::string>(),
                      needs.empty() ? "-" : needs, runs_on.empty() ? "-" : runs_on});
    }
  std::array<size_t, 4> width{};
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows)
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", row[0], width[0], row[1], width[1], row[2], width[2],
               row[3]);
  for (const auto& skipped : (*plan)["not_triggered"])
    fmt::print("not triggered: {}: {}\n", skipped["workflow"].get<std::string>(),
               skipped["reason"].get<std::string>());
  return list_schedules(options);
}

int run_command(const RunArgs& args) {
  auto options = make_options(args);
  if (!options) return report_error(options.error());
  if (args.list) return list_jobs(*options);
  if (args.dry_run) {
    auto plan = engine::plan_json(*options);
    if (!plan) return report_error(plan.error());
    for (const auto& warning : (*plan)["warnings"])
      fmt::print(stderr, "kiln: {}\n", warning.get<std::string>());
    if (args.json)
      fmt::print("{}\n", plan->dump(2));
    else
      fmt::print("{}", engine::plan_text(*plan));
    return 0;
  }
  // A watchdog kills this run's job processes if kiln itself dies (kill -9, a crash).
  options->job_token_prefix = exec::new_job_token();
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (auto reaper =
          exec::start_orphan_reaper(ec ? "/proc/self/exe" : self, options->job_token_prefix + "-");
      !reaper)
    return report_error(reaper.error());
  auto store = open_store(options->store_path, options->repository);
  if (!store) return report_error(store.error());
  // A Slurm job's agent writes to this same store (docs/scale-out.md "Slurm").
  options->agent_store =
      options->store_path && store::is_postgres_url(options->store_path->string())
          ? options->store_path->string()
          : std::filesystem::absolute(options->store_path ? *options->store_path
                                                          : default_store_path(options->repository))
                .string();

  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::FILE* log_out = args.json ? stderr : stdout;
  TerminalObserver observer(log_out, args.verbose);
  auto report = engine::run(*options, **store, observer);
  observer.finish();
  if (!report) return report_error(report.error());
  if (args.json)
    fmt::print("{}\n",
               to_json(*report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  else
    print_summary(stdout, *report, stdout_is_terminal() && !std::getenv("NO_COLOR"));
  if (g_signal != 0) return 128 + g_signal;
  return report->exit_code();
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "run the workflows an event triggers, here, now");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("-W,--workflows", args->workflows, "a workflow file or a directory of them");
  cmd->add_option("--event", args->event,
                  "push, pull_request, workflow_dispatch, schedule or image_version")
      ->check(CLI::IsMember({"push", "pull_request", "pull_request_target", "workflow_dispatch",
                             "schedule", "image_version"}));
  cmd->add_option("event_name", args->positional_event,
                  "the event, as act takes it (kiln run pull_request): same as --event")
      ->check(CLI::IsMember({"push", "pull_request", "pull_request_target", "workflow_dispatch",
                             "schedule", "image_version"}));
  cmd->add_option("-e,--event-file", args->event_file, "JSON payload for github.event");
  cmd->add_option("--input", args->inputs, "workflow_dispatch input K=V");
  cmd->add_option("--input-file", args->input_files, "dotenv file of workflow_dispatch inputs");
  cmd->add_flag("-l,--list", args->list, "list the jobs the event runs, run nothing");
  cmd->add_option("--job", args->jobs, "run only this job (and the jobs it needs)");
  cmd->add_option("--matrix", args->matrix, "run only matrix combinations with K=V");
  cmd->add_option("-s,--secret", args->secrets, "secret K=V, or NAME to read $NAME");
  cmd->add_option("--secret-file", args->secret_files, "dotenv file of secrets");
  cmd->add_option("--env-file", args->env_files, "dotenv file of variables for every job");
  cmd->add_option("--var", args->vars, "a configuration variable K=V for ${{ vars.K }}");
  cmd->add_option("--var-file", args->var_files, "dotenv file of configuration variables");
  cmd->add_option("--actor", args->actor, "github.actor (default: $USER)");
  cmd->add_option("--max-parallel", args->max_parallel, "jobs at once (default: CPUs)");
  cmd->add_option("--config", args->config,
                  "host configuration (default: $KILN_CONFIG, else /etc/kiln/kiln.yml)");
  cmd->add_option("--label", args->labels,
                  "a runs-on label this host serves: NAME, or NAME=REQUEST to map it to GPU "
                  "labels ('gpu-a100=gpu gpu-model:a100'), as kiln.yml does")
      ->allow_extra_args(false);
  cmd->add_option("--simulate-gpus", args->simulate_gpus,
                  "place GPU jobs on this simulated inventory (JSON; docs/gpus.md)");
  cmd->add_option("--pin-gpu-model", args->pin_models,
                  "GPU jobs get only GPUs of this model (repeatable; kiln bench bisect pins its "
                  "runs to the bad run's testbed)")
      ->allow_extra_args(false);
  cmd->add_option("--pin-gpu-driver", args->pin_driver,
                  "GPU jobs get only GPUs with this driver version");
  cmd->add_option("--pin-gpu-uuid", args->pin_uuids,
                  "GPU jobs get only these GPUs when the host has them all (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--actions-mirror", args->actions_mirror,
                  "directory of other repositories' actions and reusable workflows, as "
                  "DIR/owner/repo@ref/ (default: $KILN_ACTIONS_MIRROR)");
  cmd->add_flag("--dry-run", args->dry_run, "print the plan, run nothing");
  cmd->add_flag("--json", args->json, "print the result (or plan) as JSON on stdout");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_flag("--keep-workspaces", args->keep_workspaces,
                "keep each job's workspace under .kiln/work after the run");
  cmd->add_flag("--keep-failed", args->keep_failed,
                "keep a failed job's container, workspace and GPUs for `kiln exec` (kiln.yml "
                "debug.hold, default 30 min; also KILN_KEEP_ON_FAILURE=1)");
  cmd->add_option("--container-engine", args->container_engine,
                  "podman, docker or a path (default: KILN_CONTAINER_ENGINE, else podman if "
                  "installed, else docker)");
  cmd->add_option("--pull", args->pull, "image pull policy: never, missing (default) or always");
  cmd->add_flag("-v,--verbose", args->verbose, "show debug lines");
  // One value per occurrence (repeat the option), so that a positional event after a repeatable
  // option is not taken as one of its values.
  // A value given twice (by .kilnrc and the command line): the last one wins.
  for (auto* option : cmd->get_options()) {
    if (option->get_expected_max() > 1)
      option->allow_extra_args(false);
    else
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  cmd->callback([args, &exit_code] { exit_code = run_command(*args); });
}

}  // namespace kiln::cli
