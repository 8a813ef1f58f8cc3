#pragma once
// The step runner: runs one `run:` step with GitHub's semantics. It resolves the shell
// (shell.h), writes the script to a file in the job's temp dir, creates fresh file-command files
// (file_commands.h), starts the shell in its own process group with exactly the environment the
// engine built, passes every output line through StepOutput (workflow commands, masking) to the
// LogSink, enforces the step timeout and cancellation (SIGTERM to the group, SIGKILL after a
// grace period; optionally SIGINT before them), and finally reads the file commands.
//
// The engine keeps the job-level state across steps: the Masker, the env and PATH additions
// (add_path_entries / compose_path in file_commands.h), outputs for `steps.<id>.outputs`.
// Processes a step leaves running in the background survive the step, as on GitHub (a later
// step may use a server started earlier); kill_job_processes() (process_tracker.h) ends them
// when the job ends.

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/run_as.h"
#include "kiln/core/subprocess.h"
#include "kiln/exec/cancel_token.h"
#include "kiln/exec/file_commands.h"
#include "kiln/exec/log_sink.h"
#include "kiln/exec/masker.h"
#include "kiln/exec/step_launcher.h"
#include "kiln/exec/subreaper.h"

namespace kiln::exec {

struct StepRequest {
  std::string shell{};                        // as written (step, then defaults.run); "" = default
  std::string script{};                       // the `run:` text, expressions already evaluated
  std::filesystem::path working_directory{};  // must exist; empty = kiln's own cwd
  core::Environment env{};           // the complete environment the engine built (PATH included)
  std::filesystem::path temp_dir{};  // RUNNER_TEMP: the script and file-command files go here
  std::chrono::milliseconds timeout{0};  // timeout-minutes; 0 = none
  std::string job_token{};               // exported as KILN_JOB_TOKEN (process_tracker.h)
  // Where the shell runs: nullptr = on the host; a container job's launcher otherwise. The
  // shell is then looked up, and working_directory must exist, where the launcher runs it.
  StepLauncher* launcher = nullptr;
  // On the host: the job's holders (subreaper.h) keep and finally kill what the step leaves
  // behind. nullptr: only the token scan does.
  const JobSubreaper* subreaper = nullptr;
  // jobs.user: the shell runs as this user, switched by the holder (needs `subreaper`).
  const core::RunAs* run_as = nullptr;
};

struct StepRunnerOptions {
  // Between SIGTERM and SIGKILL on timeout or cancellation.
  std::chrono::milliseconds kill_grace{5000};
  // On cancellation (not on a timeout): SIGINT to the group first, and up to this long for the
  // step to end before SIGTERM; 0: SIGTERM at once. GitHub cancels a step with SIGINT, 7.5 s,
  // SIGTERM, 2.5 s, then kills what is left (its background steps' `cancel:` the same way).
  std::chrono::milliseconds interrupt_grace{0};
  // Longer output lines reach the sink in pieces (and cannot be workflow commands).
  std::size_t max_line_bytes = 1024 * 1024;
  // GitHub refuses step summaries above 1 MiB; the summary is dropped with an error annotation.
  std::size_t max_summary_bytes = 1024 * 1024;
  // stderr joins stdout in one pipe, so the log keeps the order in which lines were written
  // (`set -x` traces between the output they explain); every line is then Stream::out. With
  // false, the two streams are read separately and may interleave differently.
  bool merge_stderr = true;
  // After the shell exits, how long to wait for output from children still holding its pipes.
  std::chrono::milliseconds drain_idle{200};
};

enum class StepOutcome { success, failure, timed_out, cancelled };
std::string_view to_string(StepOutcome outcome);

struct StepResult {
  StepOutcome outcome = StepOutcome::failure;
  std::optional<core::ExitStatus> exit;  // the shell's; empty when it never started
  // As the step wrote them, not masked (see CommandEffects). In order; a later pair for the
  // same name wins (outputs and state are also given as maps).
  std::map<std::string, std::string> outputs;  // ::set-output then GITHUB_OUTPUT
  KeyValues env;                               // GITHUB_ENV (and allowed ::set-env)
  std::vector<std::string> path_additions;     // GITHUB_PATH (and allowed ::add-path)
  std::map<std::string, std::string> state;    // GITHUB_STATE and ::save-state
  std::string summary;                         // GITHUB_STEP_SUMMARY markdown, masked
  std::vector<Annotation> annotations;         // masked; also sent to the sink
  std::vector<std::string> failures;           // why the step failed besides its exit code (masked)
  // The launcher's command failed, not the step (StepLauncher::launch_failure): what failed.
  std::optional<std::string> launch_failure;
  std::chrono::milliseconds duration{0};
};

// Runs one step. Errors are for a step that could not be started at all (invalid or missing
// shell, unwritable temp dir, missing working directory): the engine fails the step with the
// message. Everything after the start, including a non-zero exit, is in StepResult.
Result<StepResult> run_step(const StepRequest& request, LogSink& sink, Masker& masker,
                            const CancelToken* cancel = nullptr,
                            const StepRunnerOptions& options = {});

}  // namespace kiln::exec
