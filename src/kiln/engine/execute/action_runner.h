#pragma once
// Actions kiln runs from files: local actions (`uses: ./path`) and actions of other
// repositories found in the actions mirror (`uses: owner/repo@ref`, references.h). A composite
// action's steps run inside the calling step with GitHub's step semantics (if, env, shell,
// working-directory, continue-on-error, nested `uses`), their log lines going to the calling
// step; a JavaScript action (node16/20/24) runs its main with the machine's `node`, its `pre`
// when the job starts (actions of other repositories only, as on GitHub) and its `post` at the
// end of the job.
// A Docker action fails, naming the container engine it needs.
//
// The job runner owns the job's state (environment, file-command results, the log, the
// deadline) and lends it through ActionHost, so this file holds no job state of its own.

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/core/subprocess.h"
#include "kiln/engine/engine.h"
#include "kiln/exec/step_runner.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/references.h"

namespace kiln::engine {

// What an action needs from the job that runs it (implemented by the job runner).
class ActionHost {
 public:
  virtual ~ActionHost() = default;
  // One line of the calling step's log; `kind` as in RunObserver::job_line. Masked by the host.
  virtual void log(std::string_view kind, const std::string& text) = 0;
  // The job's environment now: the host's, GITHUB_*, workflow and job env, GITHUB_ENV additions.
  virtual core::Environment job_environment() = 0;
  // The last layers of a step's environment: GITHUB_PATH additions and the granted GPUs.
  virtual void finish_environment(core::Environment& env) = 0;
  // Runs a process the way a `run:` step runs (the job's log, masker, cancellation, deadline and
  // process token are the host's). Its GITHUB_ENV and GITHUB_PATH apply to the job's later
  // steps; outputs and state are returned.
  virtual Result<exec::StepResult> run_process(exec::StepRequest request) = 0;
  // Runs a built-in action (actions/checkout, ...) with evaluated inputs.
  virtual Conclusion run_builtin(const std::string& uses,
                                 const std::map<std::string, std::string>& with,
                                 const core::Environment& env,
                                 std::map<std::string, std::string>& outputs) = 0;
  // Work for the end of the job (a JavaScript action's post), run in reverse order after the
  // steps; false fails the job.
  virtual void add_post(std::function<bool()> run) = 0;
  // The job's expression contexts now (github, env, job, runner, matrix, needs, secrets, ...),
  // with failed and cancelled as the job's status functions see them.
  virtual expr::Context job_context() = 0;
  virtual std::filesystem::path workspace() const = 0;
  virtual const workflow::ReferenceRoots& references() const = 0;
};

// One `uses:` of a file action, by a job step or by a step of a composite action.
struct ActionCall {
  std::string uses;  // as written
  SourceLocation where;
  std::string step_name;                    // for the post step's log line
  std::map<std::string, std::string> with;  // evaluated
  // The calling step's own `env:` entries (evaluated, with those of the composite actions
  // around it): they reach every step of a composite action.
  std::map<std::string, std::string> env;
  int depth = 1;  // 1 for a job's step, 2 for a step of a composite action it calls, ...
};

struct ActionOutcome {
  Conclusion conclusion = Conclusion::success;
  std::map<std::string, std::string> outputs;  // raw (the host masks what it stores)
};

// The `pre` entry points of the JavaScript actions of other repositories among `calls` (a job's
// steps, in order), run when the job starts as on GitHub; a local action's `pre` never runs,
// since it is not on disk before actions/checkout. Failure when one fails: the job fails.
Conclusion run_pre_steps(ActionHost& host, const std::vector<ActionCall>& calls);

// Resolves, loads and runs the action; every problem (not found, invalid action.yml, a failing
// step) is logged to the calling step and fails it.
ActionOutcome run_action(ActionHost& host, const ActionCall& call);

}  // namespace kiln::engine
