#pragma once
// The step-group runner: GitHub's parallel steps within one job. The job runner starts a
// background step (`background: true`, a member of a `parallel:` group) here with the work it
// prepared for it (a `run:` step's request through the step runner, step_runner.h; an action
// through a host of its own, job_background_action.cpp), and hands the control steps (`wait`,
// `wait-all`, `cancel`) and the job's end to it. The work runs on a thread of BackgroundSteps; what
// a step left is handed back to the job runner on its own thread, once the step is waited for
// (GitHub: outputs and environment changes of a background step are seen only after a wait that
// includes it), so the job's state has one writer.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kiln/engine/engine.h"
#include "kiln/engine/execute/background_steps.h"
#include "kiln/exec/log_sink.h"
#include "kiln/exec/step_runner.h"
#include "kiln/store/store.h"
#include "kiln/workflow/model.h"

namespace kiln::engine {

// What the group needs from the job that runs it.
class StepGroupHost {
 public:
  virtual ~StepGroupHost() = default;
  // Where step `index`'s lines go (stored as that step's, shown prefixed with `label`); called
  // on the job's thread, written from the step's.
  virtual std::unique_ptr<exec::LogSink> step_sink(int index, const std::string& label) = 0;
  // A line of the job's own (kind "kiln"), on the job's thread.
  virtual void note(const std::string& text) = 0;
  // Ends step `index` with what its run left (an error: it could not start), on the job's
  // thread; `cancelled_on_purpose`: stopped by `cancel:` or at the job's end, which does not
  // fail the job. Returns the step's conclusion.
  virtual Conclusion finish_background(int index, const Result<exec::StepResult>& run,
                                       bool cancelled_on_purpose) = 0;
};

class StepGroup {
 public:
  // GitHub cancels a step with SIGINT, SIGTERM 7.5 s later, and kills it 2.5 s after that.
  static constexpr std::chrono::milliseconds k_interrupt_grace{7500};
  static constexpr std::chrono::milliseconds k_kill_grace{2500};

  explicit StepGroup(StepGroupHost& host);

  // A background step's run, on its own thread: its lines go to `sink`; it stops (SIGINT,
  // SIGTERM, kill with `options`' graces) once `cancel` is set. What it returns is what
  // finish_background gets.
  using Work =
      std::function<Result<exec::StepResult>(const exec::CancelToken& cancel, exec::LogSink& sink,
                                             const exec::StepRunnerOptions& options)>;

  // Starts step `index` in the background; `label` names it in the log (its id, else its name).
  void start(int index, std::string label, Work work);

  // Runs a wait, wait-all or cancel step: cancels (cancel), waits for its targets and ends
  // them. A wait fails when one of them failed; a cancel does not. `stop` set meanwhile (Ctrl-C,
  // the job's timeout) cancels what is waited for.
  Conclusion run_control(const workflow::Step& step, const exec::CancelToken* stop);

  // The job's steps are done: waits for the background steps still running (GitHub's implicit
  // wait-all) or, with `stop_reason` (the job failed, was cancelled, ran out of time), cancels
  // them; then ends every step not ended yet.
  void end_of_job(const std::optional<std::string>& stop_reason, const exec::CancelToken* stop);

 private:
  struct Record {
    std::string label;
    std::unique_ptr<exec::LogSink> sink;
    Work work;
    Result<exec::StepResult> run = exec::StepResult{};  // written by the step's thread
    bool cancel_requested = false;
    std::optional<Conclusion> conclusion;  // once ended
  };

  void cancel(int index, const std::string& why);
  Conclusion collect(int index);

  StepGroupHost& host_;
  std::map<int, Record> records_;
  BackgroundSteps threads_;  // last: destroyed first, so no thread outlives a record
};

}  // namespace kiln::engine
