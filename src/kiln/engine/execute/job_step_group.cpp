// The job's side of its background steps (step_group.h): their log sinks, how a background step
// is ended once it is waited for, and what the job does with the ones left at its end.

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/execute/job_run.h"

namespace kiln::engine {

std::unique_ptr<exec::LogSink> JobRun::step_sink(int index, const std::string& label) {
  {
    std::lock_guard lock(log_mutex_);
    step_lines_[index];  // made here, on the job's thread: the step's thread only fills it
  }
  return std::make_unique<LogSink>(*this, index, fmt::format("[{}] ", label));
}

Conclusion JobRun::finish_background(int index, const Result<exec::StepResult>& run,
                                     bool cancelled_on_purpose) {
  BackgroundStep& started = background_.at(index);
  current_step_ = index;
  raw_outputs_.clear();
  step_end_kind_.clear();
  {
    std::lock_guard lock(log_mutex_);
    recent_lines_ = std::move(step_lines_[index]);
  }
  if (run) started.result.duration = run->duration;
  Conclusion outcome = apply_run(run, started.result, started.step_limit, started.minutes);
  end_background_action(index);
  refresh_env_context();  // its GITHUB_ENV, from the next step on
  return finish_step(job_.steps[static_cast<size_t>(index)], std::move(started.result), started.row,
                     outcome, started.started, cancelled_on_purpose);
}

void JobRun::end_step_group() {
  std::optional<std::string> stop;
  if (timed_out_)
    stop = "the job ran out of time";
  else if (setup_.cancel->cancelled())
    stop = "the job was cancelled";
  else if (failed_)
    stop = "the job failed";
  step_group_.end_of_job(stop, setup_.cancel);
  current_step_.reset();
  // Background steps end when they are waited for: the summary lists the steps in job order.
  std::ranges::stable_sort(summary_.steps, {}, &StepSummary::index);
}

}  // namespace kiln::engine
