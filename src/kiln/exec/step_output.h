#pragma once
// StepOutput: what happens to each line a step prints. Workflow commands (workflow_commands.h)
// are acted on and become structured LogEvents; every other line is masked and passed to the
// LogSink as output. Also the place where kiln's own messages about a step are logged, so that
// they too are masked.
//
// Per step, as in GitHub's runner: `::stop-commands::` and `::echo::` last until the step ends;
// an unclosed `::group::` is closed at the end. `::set-env` and `::add-path` are disabled (they
// fail the step) unless the step's environment has ACTIONS_ALLOW_UNSECURE_COMMANDS=true.
// `::add-matcher` and `::remove-matcher` (problem matchers) are accepted and ignored.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/subprocess.h"
#include "kiln/exec/file_commands.h"
#include "kiln/exec/log_sink.h"
#include "kiln/exec/masker.h"
#include "kiln/exec/workflow_commands.h"

namespace kiln::exec {

// What a step's workflow commands asked for. Values are as the step wrote them (not masked):
// later steps use them through expressions and environment, as on GitHub.
struct CommandEffects {
  KeyValues outputs;                        // ::set-output
  KeyValues state;                          // ::save-state
  KeyValues env;                            // ::set-env (only when allowed)
  std::vector<std::string> path_additions;  // ::add-path (only when allowed)
  std::vector<Annotation> annotations;      // ::error/::warning/::notice and kiln's own (masked)
  std::vector<std::string> failures;        // reasons the step fails though it exited 0 (masked)
};

class StepOutput {
 public:
  StepOutput(LogSink& sink, Masker& masker, bool allow_unsecure_commands = false);

  // One line (or piece of a long line, partial=true) of the step's output: core::LineCallback.
  void on_line(core::Stream stream, std::string_view text, bool partial);
  // Flushes held-back pieces and closes an open group. Call once, after the process ended.
  void finish();

  // kiln's own messages and annotations about the step (masked before they are logged).
  void system(std::string_view message);
  void annotate(Annotation annotation);
  // An error annotation that also fails the step.
  void fail(std::string_view message);

  const CommandEffects& effects() const { return effects_; }

 private:
  void handle_line(core::Stream stream, std::string_view text);
  void run_command(const WorkflowCommand& command, core::Stream stream, std::string_view line);
  void emit(LogKind kind, core::Stream stream, std::string_view text, bool partial = false);
  void deprecated(std::string_view name);

  LogSink& sink_;
  Masker& masker_;
  bool allow_unsecure_;
  bool echo_ = false;
  bool in_group_ = false;
  std::string stop_token_;               // non-empty while commands are stopped
  Masker::Line pieces_[2];               // a long line being delivered in pieces, per stream
  bool continuing_[2] = {false, false};  // a long line is being delivered in pieces
  CommandEffects effects_;
};

}  // namespace kiln::exec
