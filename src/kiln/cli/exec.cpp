// kiln exec RUN JOB [-- CMD...]: a shell (or CMD) in the environment of a failed job that kiln
// keeps for debugging (--keep-failed; engine/execute/debug_hold.h): in its container through the
// engine's `exec -it`, or in its workspace for a host job, with the job's environment and GPUs.
// kiln release RUN JOB: ends the hold now.

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/core/subprocess.h"
#include "kiln/engine/execute/debug_hold.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/store/process_identity.h"

namespace kiln::cli {
namespace {

struct ExecArgs {
  std::string directory = ".";
  std::int64_t run = 0;
  std::string job;
  std::vector<std::string> command;
};

std::filesystem::path kiln_dir_of(const std::string& directory) {
  return default_store_path(directory).parent_path();
}

// The hold of `job` (a key, or a job id that names one matrix instance) in run `run`.
struct Found {
  std::filesystem::path path;
  engine::DebugHold hold;
};
Result<Found> find_hold(const ExecArgs& args) {
  auto dir = kiln_dir_of(args.directory) / "holds";
  std::vector<Found> matches;
  std::vector<std::string> held;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    auto hold = engine::read_debug_hold(entry.path());
    if (!hold || hold->run_id != args.run) continue;
    held.push_back(hold->job);
    if (hold->job == args.job || hold->job.starts_with(args.job + " ("))
      matches.push_back({entry.path(), std::move(*hold)});
  }
  if (matches.size() > 1) {
    std::vector<std::string> keys;
    for (const auto& match : matches) keys.push_back("'" + match.hold.job + "'");
    return fail(ErrorCode::invalid_input, "run {}: '{}' names several held jobs: {}", args.run,
                args.job, fmt::join(keys, ", "));
  }
  if (matches.empty())
    return fail(ErrorCode::not_found,
                "run {} has no job '{}' kept for debugging ({}); keep a failed job with `kiln run "
                "--keep-failed` or KILN_KEEP_ON_FAILURE=1",
                args.run, args.job,
                held.empty() ? std::string("none of its jobs is held")
                             : fmt::format("held: {}", fmt::join(held, ", ")));
  auto& found = matches.front();
  const auto& hold = found.hold;
  if (!store::is_process_alive({hold.owner_pid, hold.owner_start, {}})) {
    std::filesystem::remove(found.path, ec);
    return fail(ErrorCode::not_found,
                "run {} job '{}' is no longer held: the kiln that held it (pid {}) is gone",
                args.run, hold.job, hold.owner_pid);
  }
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  if (now >= hold.expires_at_ms)
    return fail(ErrorCode::not_found, "run {} job '{}' is no longer held: its time ran out",
                args.run, hold.job);
  return std::move(found);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int run_exec(const ExecArgs& args) {
  auto found = find_hold(args);
  if (!found) return report_error(found.error());
  const auto& hold = found->hold;
  std::vector<std::string> command = args.command;
  // The default: bash where the image (or host) has it, else sh.
  if (command.empty())
    command = {"sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"};
  std::vector<std::string> argv, env;
  if (!hold.container.empty()) {
    // `exec -e NAME`: the engine takes the value from its environment, so none is on the
    // command line.
    argv = {hold.engine, "exec", "-i"};
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) argv.push_back("-t");
    argv.insert(argv.end(), {"-w", hold.workspace.string()});
    auto engine_env = core::current_environment();
    for (const auto& [key, value] : hold.env) {
      argv.insert(argv.end(), {"-e", key});
      engine_env[key] = value;
    }
    argv.push_back(hold.container);
    argv.insert(argv.end(), command.begin(), command.end());
    for (const auto& [key, value] : engine_env) env.push_back(key + "=" + value);
  } else {
    auto path = hold.env.contains("PATH") ? hold.env.at("PATH") : std::string("/usr/bin:/bin");
    auto program = core::find_executable(command.front(), path);
    if (!program)
      return report_error({ErrorCode::not_found,
                           fmt::format("'{}' is not in the job's PATH", command.front()),
                           {}});
    argv = command;
    argv.front() = program->string();
    for (const auto& [key, value] : hold.env) env.push_back(key + "=" + value);
    if (::chdir(hold.workspace.c_str()) != 0)
      return report_error({ErrorCode::not_found,
                           fmt::format("the job's workspace {} is gone", hold.workspace.string()),
                           {}});
  }
  fmt::print(stderr, "kiln: run {} job '{}' ({}; held until {})\n", hold.run_id, hold.job,
             hold.container.empty() ? "host job, in its workspace" : "container " + hold.container,
             engine::clock_time(std::chrono::system_clock::time_point(
                 std::chrono::milliseconds(hold.expires_at_ms))));
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);
  ::execve(c_argv.front(), c_argv.data(), c_env.data());
  return report_error({ErrorCode::io_error,
                       fmt::format("cannot start {}: {}", argv.front(), std::strerror(errno)),
                       {}});
}

int run_release(const ExecArgs& args) {
  auto found = find_hold(args);
  if (!found) return report_error(found.error());
  std::error_code ec;
  std::filesystem::remove(found->path, ec);
  if (ec) return report_error({ErrorCode::io_error, ec.message(), {found->path.string()}});
  // The holder removes the container and frees the GPUs within a moment: wait for it (bounded).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const auto& hold = found->hold;
  while (!hold.container.empty() && std::chrono::steady_clock::now() < deadline) {
    auto exists = core::run_command({hold.engine, "container", "exists", hold.container}, {},
                                    std::nullopt, std::chrono::seconds(30));
    if (!exists || !exists->ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  fmt::print(
      "released run {} job '{}'{}\n", hold.run_id, hold.job,
      hold.gpus.empty() ? "" : fmt::format(" and its GPU(s) {}", fmt::join(hold.gpus, ", ")));
  return 0;
}

void add_arguments(CLI::App* cmd, const std::shared_ptr<ExecArgs>& args) {
  cmd->add_option("run", args->run, "run id (see kiln runs)")->required();
  cmd->add_option("job", args->job, "job key, or the job id of one matrix instance")->required();
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
}

}  // namespace

void add_exec_commands(CLI::App& app, int& exit_code) {
  auto exec_args = std::make_shared<ExecArgs>();
  auto* exec = app.add_subcommand(
      "exec", "open a shell (or run CMD after --) in a failed job kept for debugging");
  add_arguments(exec, exec_args);
  exec->add_option("command", exec_args->command, "the command (default: bash, else sh)");
  exec->callback([exec_args, &exit_code] { exit_code = run_exec(*exec_args); });

  auto release_args = std::make_shared<ExecArgs>();
  auto* release =
      app.add_subcommand("release", "end the debugging hold of a failed job now (kiln exec)");
  add_arguments(release, release_args);
  release->callback([release_args, &exit_code] { exit_code = run_release(*release_args); });
}

}  // namespace kiln::cli
