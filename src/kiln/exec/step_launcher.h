#pragma once
// Where a `run:` step's shell runs. By default the step runner starts the shell on the host; a
// StepLauncher moves it elsewhere (a job container) without changing anything else the runner
// does: the script and file-command files, output handling, masking, timeouts and cancellation
// all stay in step_runner.cpp, so a container step has exactly a host step's semantics. The
// launcher only turns "run this argv with this environment in this directory" into the
// command kiln spawns on the host (`podman exec ... CONTAINER argv`, or a request to a helper
// inside the container), and finds the shell's program where it will run.
//
// Paths given to a launcher are host paths; a launcher whose target sees the host's files at
// other paths translates them. Kiln's container jobs mount the job directory at the same path,
// so none needs translating (docs/containers.md).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"

namespace kiln::exec {

class StepLauncher {
 public:
  virtual ~StepLauncher() = default;

  // The program's path where the step runs, looked up in `path_list` there; nullopt when it is
  // not there.
  virtual std::optional<std::filesystem::path> find_program(std::string_view program,
                                                            std::string_view path_list) = 0;

  // What kiln spawns so that `argv` runs with exactly `env` in `cwd` where the step runs. The
  // result's output settings are replaced by the step runner's.
  virtual Result<core::SpawnOptions> launch(std::vector<std::string> argv, core::Environment env,
                                            std::filesystem::path cwd) = 0;

  // The hooks below name the step by `token`: KILN_JOB_TOKEN of the environment launch()
  // returned (a launcher gives each step's processes a token of their own). Several steps may
  // run through one launcher at once (background steps): every member is called from the
  // step's own thread.

  // Called after the step runner sent `signal` (SIGINT, SIGTERM: a cancelled step) to the
  // spawned command's process group: passes it on to the step's processes where they run, when
  // the spawned command does not forward it itself (`podman exec` does not).
  virtual void signalled(std::string_view token, int signal) {
    (void)token;
    (void)signal;
  }

  // Called when the spawned command ended by itself (not stopped by the step runner) and did not
  // succeed: whether its status is the spawned command's own failure rather than the step's
  // (`podman exec` killed by a signal, or failing while the job container stopped under it),
  // and then what failed, for the job's `infra` class (docs/failures.md).
  // nullopt: the status is the step's.
  virtual std::optional<std::string> launch_failure(const core::ExitStatus& status) {
    (void)status;
    return std::nullopt;
  }

  // Called after the step runner stopped the spawned command (timeout, cancellation): ends
  // what the step still runs where it ran (stopping `podman exec` does not stop the process it
  // started in the container).
  virtual void stopped(std::string_view token) { (void)token; }
};

}  // namespace kiln::exec
