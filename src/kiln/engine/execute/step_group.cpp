#include "kiln/engine/execute/step_group.h"

#include <algorithm>

#include <fmt/format.h>

namespace kiln::engine {

StepGroup::StepGroup(StepGroupHost& host) : host_(host) {}

void StepGroup::start(int index, std::string label, Work work) {
  auto [it, inserted] = records_.try_emplace(index);
  if (!inserted) return;
  Record& record = it->second;
  record.label = std::move(label);
  record.sink = host_.step_sink(index, record.label);
  record.work = std::move(work);
  // std::map keeps `record` where it is; the thread is its only writer until wait() returns.
  threads_.start(index, [this, &record](const exec::CancelToken& cancel) {
    exec::StepRunnerOptions options;
    options.interrupt_grace = k_interrupt_grace;
    options.kill_grace = k_kill_grace;
    // A thread lets nothing escape: a library exception fails this step, not the process.
    try {
      record.run = record.work(cancel, *record.sink, options);
    } catch (const std::exception& e) {
      record.run = fail(ErrorCode::internal, "the background step failed: {}", e.what());
    }
  });
}

void StepGroup::cancel(int index, const std::string& why) {
  auto it = records_.find(index);
  if (it == records_.end() || it->second.conclusion) return;
  auto unfinished = threads_.unfinished();
  if (std::ranges::find(unfinished, index) == unfinished.end()) return;  // ended by itself
  host_.note(fmt::format("cancelling background step '{}'{}", it->second.label, why));
  it->second.cancel_requested = true;
  threads_.cancel(index);
}

Conclusion StepGroup::collect(int index) {
  Record& record = records_.at(index);
  if (!record.conclusion)
    record.conclusion = host_.finish_background(index, record.run, record.cancel_requested);
  return *record.conclusion;
}

Conclusion StepGroup::run_control(const workflow::Step& step, const exec::CancelToken* stop) {
  if (step.kind == workflow::StepKind::cancel)
    for (int index : step.targets) cancel(index, "");
  threads_.wait(step.targets, stop);
  // Ended in step order, whatever order the wait names them in: their GITHUB_ENV and
  // GITHUB_PATH additions apply in that order.
  std::vector<int> targets = step.targets;
  std::ranges::sort(targets);
  Conclusion result = Conclusion::success;
  for (int index : targets) {
    if (!records_.contains(index)) continue;  // skipped by its `if:`, never started
    if (collect(index) == Conclusion::failure && step.kind != workflow::StepKind::cancel)
      result = Conclusion::failure;
  }
  return result;
}

void StepGroup::end_of_job(const std::optional<std::string>& stop_reason,
                           const exec::CancelToken* stop) {
  auto unfinished = threads_.unfinished();
  for (int index : unfinished) {
    if (stop_reason)
      cancel(index, fmt::format(": {}", *stop_reason));
    else
      host_.note(
          fmt::format("waiting for background step '{}' at the job's end (GitHub's "
                      "implicit wait-all; 'cancel: ID' stops a step that does not end "
                      "by itself)",
                      records_.at(index).label));
  }
  threads_.wait(unfinished, stop);
  for (auto& [index, record] : records_) collect(index);
}

}  // namespace kiln::engine
