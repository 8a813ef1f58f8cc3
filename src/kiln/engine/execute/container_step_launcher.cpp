#include "kiln/engine/execute/container_step_launcher.h"

#include <signal.h>

#include <chrono>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "kiln/core/subprocess.h"
#include "kiln/exec/process_tracker.h"

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;

// Runs a step's command with `exec` in the job container (see exec/step_launcher.h).
// With the step helper (helper/step_helper.cpp), `kiln-step-helper run SOCKET DIR -- ARGV` on
// the host asks the helper serving in the container to start ARGV; else `podman exec`.
class ContainerStepLauncher final : public exec::StepLauncher {
 public:
  ContainerStepLauncher(const container::EngineCli& cli, std::string container,
                        std::optional<std::filesystem::path> helper, std::filesystem::path socket)
      : cli_(cli),
        container_(std::move(container)),
        host_env_(core::current_environment()),
        helper_(std::move(helper)),
        socket_(std::move(socket)) {}

  // argv that runs `argv` in the container in `cwd`, with the step's environment when the
  // spawned process has it.
  std::vector<std::string> helper_argv(const std::vector<std::string>& argv,
                                       const std::filesystem::path& cwd) const {
    std::vector<std::string> out{helper_->string(), "run", socket_.string(), cwd.string(), "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  std::optional<std::filesystem::path> find_program(std::string_view program,
                                                    std::string_view path_list) override {
    std::lock_guard lock(mutex_);  // background steps start at once (step_launcher.h)
    std::string key = fmt::format("{}\n{}", program, path_list);
    if (auto it = found_.find(key); it != found_.end()) return it->second;
    std::optional<std::filesystem::path> result;
    if (program.find('/') != std::string_view::npos) {
      result = std::filesystem::path(program);
    } else {
      std::vector<std::string> probe{"sh",
                                     "-c",
                                     "PATH=\"$1\" command -v \"$2\"",
                                     "sh",
                                     std::string(path_list),
                                     std::string(program)};
      Result<std::string> output;
      if (helper_) {
        auto ran = core::run_command(helper_argv(probe, "/"), {}, std::nullopt, 60s);
        if (ran && ran->ok()) {
          std::string text = ran->out;
          while (!text.empty() && text.back() == '\n') text.pop_back();
          output = text;
        } else {
          output = std::unexpected(Error{ErrorCode::not_found, "not found", {}});
        }
      } else {
        std::vector<std::string> args{"exec", container_};
        args.insert(args.end(), probe.begin(), probe.end());
        output = cli_.run(args, 60s);
      }
      // A path; or the bare name for a shell builtin (busybox's applets): `exec` finds it.
      if (output && !output->empty())
        result = output->front() == '/' ? std::filesystem::path(*output)
                                        : std::filesystem::path(program);
    }
    found_[key] = result;
    return result;
  }

  Result<core::SpawnOptions> launch(std::vector<std::string> argv, core::Environment env,
                                    std::filesystem::path cwd) override {
    // Each step's processes carry a token of their own, so that a step that timed out can be
    // stopped inside the container without touching what earlier steps left running.
    std::string& token = env[std::string(exec::k_job_token_variable)];
    {
      std::lock_guard lock(mutex_);
      token = fmt::format("{}.s{}", token, ++steps_);
    }
    core::SpawnOptions spawn;
    if (helper_) {
      spawn.argv = helper_argv(argv, cwd);
      spawn.env = std::move(env);
      return spawn;
    }
    spawn.argv = {cli_.engine().program.string(), "exec"};
    if (!cwd.empty()) {
      spawn.argv.push_back("-w");
      spawn.argv.push_back(cwd.string());
    }
    // `-e NAME` without a value: the engine copies the value from its own environment, so no
    // value (a secret) appears on a command line that `ps` shows.
    core::Environment engine_env = host_env_;
    for (const auto& [key, value] : env) {
      spawn.argv.push_back("-e");
      spawn.argv.push_back(key);
      engine_env[key] = value;
    }
    spawn.argv.push_back(container_);
    spawn.argv.insert(spawn.argv.end(), argv.begin(), argv.end());
    // The engine runs with the step's PATH (the container's): it is started by its absolute
    // path and finds its runtime through its own configuration.
    spawn.env = std::move(engine_env);
    return spawn;
  }

  // The step helper forwards SIGINT and SIGTERM to the step's process group itself; `exec`
  // does not: the step's processes are visible from the host (rootful engine) and carry its
  // token.
  void signalled(std::string_view token, int signal) override {
    if (helper_ || token.empty()) return;
    for (pid_t pid : exec::find_job_processes(token)) ::kill(pid, signal);
  }

  // `exec` passes the step's exit code on (a signal that killed the step's processes in the
  // container comes back as 128+N), so `exec` killed by a signal is the engine client's own
  // failure. An exit code is the step's unless the job container is no longer running: a step
  // does not stop its own job container, while the engine's own errors (125 by `man
  // podman-exec`; podman 4.3 answers 255 for a container that stopped, "container state
  // improper"), the helper's client losing the helper (125), and the step's processes killed as
  // the container went (137) all end that way. 126 and 127 in a running container are the
  // shell's (a command of the script not found): kiln found the shell there before it ran. The
  // helper's client re-raises the signal that ended the step, so with the helper a signal is
  // the engine's only when the container is gone too.
  std::optional<std::string> launch_failure(const core::ExitStatus& status) override {
    std::string client = helper_
                             ? std::string("kiln-step-helper run")
                             : fmt::format("{} exec", cli_.engine().program.filename().string());
    std::string ended = status.signal != 0 ? fmt::format("was {}", status.to_string())
                                           : fmt::format("exited with code {}", status.exit_code);
    if (status.signal != 0 && !helper_) return fmt::format("{} {}", client, ended);
    auto running = cli_.run({"container", "inspect", "--format", "{{.State.Running}}", container_},
                            std::chrono::seconds(30));
    if (running && running->starts_with("true")) return std::nullopt;
    return fmt::format("{} {}, and the job container {}", client, ended,
                       running ? std::string("is not running")
                               : fmt::format("cannot be inspected: {}", running.error().message));
  }

  void stopped(std::string_view token) override {
    // Stopping `exec` (or the helper's client) does not stop what it started in the container.
    if (!token.empty()) (void)exec::kill_job_processes(token);
  }

 private:
  const container::EngineCli& cli_;
  std::string container_;
  core::Environment host_env_;
  std::optional<std::filesystem::path> helper_;
  std::filesystem::path socket_;
  std::map<std::string, std::optional<std::filesystem::path>> found_;
  std::mutex mutex_;  // found_ and steps_
  int steps_ = 0;
};

}  // namespace

std::unique_ptr<exec::StepLauncher> make_container_step_launcher(
    const container::EngineCli& cli, std::string container,
    std::optional<std::filesystem::path> helper, std::filesystem::path socket) {
  return std::make_unique<ContainerStepLauncher>(cli, std::move(container), std::move(helper),
                                                 std::move(socket));
}

}  // namespace kiln::engine
