// kiln agent JOB_FILE: the command a Slurm job of `executor: slurm` runs on its node
// (engine/execute/slurm_agent.h, docs/scale-out.md "Slurm"). Not for people to type: the Slurm
// executor writes the job file and submits this command with sbatch.
// Exit codes: 0 the job succeeded, 1 it failed or was cancelled, 2 a bad job file, 3 the store.

#include <atomic>
#include <chrono>
#include <csignal>
#include <string_view>
#include <thread>

#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/engine/execute/slurm_agent.h"

namespace kiln::cli {
namespace {

volatile std::sig_atomic_t g_agent_signal = 0;

void on_agent_signal(int signal) { g_agent_signal = signal; }

// The job's lines, to Slurm's output file of the job (the store has them too).
class AgentObserver final : public engine::RunObserver {
 public:
  void run_started(const std::string&, std::int64_t) override {}
  void job_started(const std::string&) override {}
  void job_line(const std::string& job_key, std::string_view kind, std::string_view text) override {
    fmt::print(stderr, "[{}] {}{}\n", job_key, kind == "output" ? "" : fmt::format("{}: ", kind),
               text);
  }
  void job_finished(const engine::JobSummary&) override {}
  void progress(int, int, const std::vector<std::string>&) override {}
  void warning(const std::string& text) override { fmt::print(stderr, "warning: {}\n", text); }
};

}  // namespace

void add_agent_command(CLI::App& app, int& exit_code) {
  auto job_file = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "agent", "run one job of a Slurm job file on this node (started by the Slurm executor)");
  cmd->add_option("JOB_FILE", *job_file, "the job.json the executor wrote to the spool")
      ->required();
  cmd->callback([job_file, &exit_code] {
    // SIGTERM (scancel, Slurm's time limit) and SIGINT cancel the job's steps, as Ctrl-C does
    // for `kiln run`; the outcome is still written.
    struct sigaction action = {};
    action.sa_handler = on_agent_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    exec::CancelToken cancel;
    std::atomic<bool> done{false};
    std::thread watcher([&] {
      while (!done) {
        if (g_agent_signal != 0) cancel.cancel();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    AgentObserver observer;
    auto summary = engine::run_slurm_agent(*job_file, cancel, observer);
    done = true;
    watcher.join();
    if (!summary) {
      exit_code = report_error(summary.error());
      return;
    }
    exit_code = summary->conclusion == engine::Conclusion::success ||
                        summary->conclusion == engine::Conclusion::skipped
                    ? 0
                    : 1;
  });
}

}  // namespace kiln::cli
