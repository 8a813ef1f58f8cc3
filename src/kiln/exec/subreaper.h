#pragma once
// Clean-up that nothing escapes (issue 26): every `run:` step on the host runs under a holder
// process that is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so whatever the step leaves
// behind — `setsid env -i daemon &`, a double fork, nohup, disown — is reparented to the holder
// instead of init, environment cleared or not. The holder keeps them (and reaps their zombies)
// until the job ends, as GitHub lets a step's background server serve later steps, then kills
// the whole subtree. The job-token scan (process_tracker.h) stays as the last resort for a
// process that left the holder's subtree (one that killed its holder).
//
// Layout of one step: kiln spawns `kiln-subreaper LIFELINE KILN-PID -- SHELL...` (F, the step's
// process group leader, what kiln waits for; holder/subreaper_main.cpp, a small static binary
// beside kiln, so that it costs about a millisecond per step). F forks the holder H, which
// becomes a subreaper, leaves F's process group (a group signal that stops the step does not
// reach it), forks the shell S back into F's group and re-executes itself without the job token
// in its environment (so a dying kiln's watchdog does not kill it before it has killed its
// subtree). F exits with S's exit status (H sends it), so kiln sees the shell's status as
// before. H waits while the LIFELINE file exists and kiln (KILN-PID, with its start time)
// lives; then it kills every process reparented to it, repeatedly until it has no child,
// writes what it killed to LIFELINE.killed and exits. kiln's own children are never waited
// for by anyone but kiln.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/run_as.h"

namespace kiln::exec {

// The kiln-subreaper binary, set once by kiln's main when it is beside kiln. Empty (the
// engine's unit tests): steps run without holders and the token scan cleans up.
void set_subreaper_program(std::filesystem::path program);
const std::filesystem::path& subreaper_program();

// One job's side of it (engine/job_runner): the lifeline file, the argv of each step wrapped.
class JobSubreaper {
 public:
  // Creates LIFELINE in `dir` (the job's own directory). `program` is kiln-subreaper.
  static Result<JobSubreaper> start(const std::filesystem::path& program,
                                    const std::filesystem::path& dir);
  // The step's argv run under a holder; with `user`, the step runs as that user (jobs.user).
  std::vector<std::string> wrap(std::vector<std::string> argv,
                                const core::RunAs* user = nullptr) const;
  // From now on every step's holder moves into these cgroup directories (core/cgroup.h)
  // before it forks the step: the step and all it starts are in the job's cgroup.
  void set_cgroup(std::vector<std::filesystem::path> directories) {
    cgroup_ = std::move(directories);
  }
  // Removes the lifeline and waits (up to `patience`) until every holder of the job killed its
  // subtree and exited. Returns "pid 1234 (sleep)" per process the holders killed.
  std::vector<std::string> end(std::chrono::milliseconds patience = std::chrono::seconds(5));

 private:
  std::filesystem::path program_;
  std::filesystem::path lifeline_;
  std::vector<std::filesystem::path> cgroup_;
};

}  // namespace kiln::exec
