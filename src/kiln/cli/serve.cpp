// kiln serve: the service (docs/serve.md); kiln approve and kiln trigger: its API from the CLI.

#include <chrono>
#include <csignal>
#include <cstdint>
#include <thread>

#include <fmt/core.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/engine/schedule/gpu_queue.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/server/server.h"

namespace kiln::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

struct ServeArgs {
  std::string config;
  std::string actions_mirror;
  std::string simulate_gpus;
  std::string port_file;
  std::string log_file;
};

// --log-file: the server's log appended to PATH (each line flushed) instead of stderr.
Status log_to_file(const std::string& path) {
  try {
    auto logger = spdlog::basic_logger_mt("kiln serve", path);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
    return {};
  } catch (const spdlog::spdlog_ex& e) {
    return fail(ErrorCode::invalid_input, "--log-file {}: {}", path, e.what());
  }
}

int serve_command(const ServeArgs& args) {
  if (!args.log_file.empty())
    if (auto logging = log_to_file(args.log_file); !logging) return report_error(logging.error());
  std::optional<std::filesystem::path> file;
  if (!args.config.empty()) file = args.config;
  auto config = config::find_host_config(file);
  if (!config) return report_error(config.error());
  server::ServeOptions options;
  options.config = std::move(*config);
  options.port_file = args.port_file;
  options.base.gpu_labels = options.config.gpu_labels;
  options.base.gpu_health = options.config.gpu_health;
  options.base.retry = options.config.retry;
  options.base.test_quarantine = options.config.test_quarantine;
  options.base.max_log_bytes = options.config.max_log_bytes;
  if (options.config.host_store) options.base.host_store = *options.config.host_store;
  if (!args.simulate_gpus.empty()) options.base.simulate_gpus = args.simulate_gpus;
  // Containers as `kiln run` takes them: $KILN_CONTAINER_ENGINE, else kiln.yml's containers.
  if (const char* engine = std::getenv("KILN_CONTAINER_ENGINE"); engine && *engine)
    options.base.container_engine = engine;
  else
    options.base.container_engine = options.config.container_engine;
  if (!options.config.pull_policy.empty()) options.base.pull_policy = options.config.pull_policy;
  options.base.container_policy = options.config.container_policy;
  if (const auto& user = options.config.job_user) {
    // kiln.yml holds the webhook secrets and API tokens, the store every log: not the jobs'.
    const auto store = options.config.serve.store.value_or(options.config.file.parent_path() /
                                                           "kiln.db");  // server.cpp's default
    for (const auto& secret_file : {options.config.file, store})
      if (!secret_file.empty())
        if (auto private_file = core::check_unreadable_by(secret_file, *user); !private_file)
          return report_error(private_file.error());
    options.base.job_user = user;
  }
  if (auto limits = apply_job_limits(options.config, options.base); !limits)
    return report_error(limits.error());
  options.base.gpu_telemetry = options.config.gpu_telemetry;
  // kiln.yml slurm: its agents write to the server's own store (docs/scale-out.md "Slurm").
  options.base.slurm = options.config.slurm;
  // kiln.yml priority: one queue of waiting GPU jobs across the triggers' engine calls.
  options.base.priority = options.config.priority;
  options.base.gpu_queue = std::make_shared<engine::GpuQueue>();
  options.base.agent_store =
      !options.config.serve.store_url.empty()
          ? options.config.serve.store_url
          : std::filesystem::absolute(
                options.config.serve.store.value_or(options.config.file.parent_path() / "kiln.db"))
                .string();
  auto mirror = actions_mirror(args.actions_mirror);
  if (!mirror) return report_error(mirror.error());
  options.base.actions_mirror = *mirror;
  // Job processes of this server are found by their tokens' prefix if the server dies.
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  options.base.job_token_prefix = exec::new_job_token();
  if (auto reaper = exec::start_orphan_reaper(ec ? "/proc/self/exe" : self,
                                              options.base.job_token_prefix + "-");
      !reaper)
    return report_error(reaper.error());

  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away must not end the server
  if (auto served = server::serve(options, g_stop); !served) return report_error(served.error());
  return 0;
}

struct TriggerArgs {
  ClientArgs client;
  std::string repository;
  std::string ref;
  double wait = 10;
};

// The trigger's answer goes to stdout as the server gave it (scripts read it); the links go to
// stderr: each run that started within --wait (the dashboard's page of it), then the trigger's
// own, which lists every run it made and its status.
int trigger_command(const TriggerArgs& args) {
  nlohmann::json answer;
  if (int rc = post(args.client, "/api/triggers",
                    {{"repository", args.repository}, {"ref", args.ref}}, &answer);
      rc != 0)
    return rc;
  const std::int64_t id = json_integer(answer, "trigger");
  if (id <= 0) return 0;
  const std::string server = server_url(args.client);
  const std::string path = fmt::format("/api/triggers/{}", id);
  std::string status = "queued";
  nlohmann::json run_ids = nlohmann::json::array();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(args.wait);
  while (args.wait > 0) {
    auto got = fetch(args.client, path);
    if (!got) {
      fmt::print(stderr, "kiln: warning: {}: {}\n", path, got.error().message);
      break;
    }
    status = json_text(*got, "status");
    if (got->contains("run_ids") && (*got)["run_ids"].is_array()) run_ids = (*got)["run_ids"];
    const bool ended = status == "finished" || status == "failed" || status == "cancelled";
    if (ended || !run_ids.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (const auto& run : run_ids)
    if (run.is_number_integer())
      fmt::print(stderr, "run {}: {}/ui/runs/{}\n", run.get<std::int64_t>(), server,
                 run.get<std::int64_t>());
  fmt::print(stderr, "trigger {} ({}): {}{}\n", id, status, server, path);
  return 0;
}

}  // namespace

void add_serve_commands(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "run the CI service: webhooks, API, run queue");
  cmd->add_option("--config", args->config,
                  "host configuration with a serve: section (default: $KILN_CONFIG, else "
                  "/etc/kiln/kiln.yml)");
  cmd->add_option("--actions-mirror", args->actions_mirror,
                  "directory of other repositories' actions (default: $KILN_ACTIONS_MIRROR)");
  cmd->add_option("--simulate-gpus", args->simulate_gpus,
                  "place GPU jobs on this simulated inventory (JSON; docs/gpus.md)");
  cmd->add_option("--port-file", args->port_file,
                  "write the port listened on to this file (for listen: HOST:0)");
  cmd->add_option("--log-file", args->log_file,
                  "append the server's log to this file instead of stderr (one line each, "
                  "flushed; reopen with a restart)");
  cmd->callback([args, &exit_code] { exit_code = serve_command(*args); });

  auto approve_args = std::make_shared<ClientArgs>();
  auto trigger_id = std::make_shared<std::int64_t>(0);
  auto* approve = app.add_subcommand(
      "approve", "let a waiting trigger (a fork's pull request) run on the server");
  approve->add_option("TRIGGER", *trigger_id, "the trigger id (GET /api/triggers)")->required();
  add_client_options(approve, *approve_args);
  approve->callback([approve_args, trigger_id, &exit_code] {
    exit_code = post(*approve_args, fmt::format("/api/triggers/{}/approve", *trigger_id),
                     nlohmann::json::object());
  });

  auto trigger_args = std::make_shared<TriggerArgs>();
  auto* trigger = app.add_subcommand(
      "trigger", "run a push of a branch's current commit on the server, as a webhook would");
  trigger
      ->add_option("REPOSITORY", trigger_args->repository, "owner/name, as in the server's config")
      ->required();
  trigger->add_option("REF", trigger_args->ref, "branch or full ref (refs/heads/main)")->required();
  trigger
      ->add_option("--wait", trigger_args->wait,
                   "seconds to wait for the trigger's runs to start, to print their links "
                   "(default 10; 0: print the trigger's link only)")
      ->check(CLI::Range(0.0, 3600.0));
  add_client_options(trigger, trigger_args->client);
  trigger->callback([trigger_args, &exit_code] { exit_code = trigger_command(*trigger_args); });
}

}  // namespace kiln::cli
