// The results of jobs (scheduler.h): an instance's, a job's over its instances (fail-fast), a
// caller job's over its calls, and a workflow run's.

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/plan/workflow_call.h"
#include "kiln/engine/schedule/scheduler.h"

namespace kiln::engine {

using store::FailureClass;

void Scheduler::finish_instance_now(Instance& instance, Conclusion conclusion,
                                    const std::string& reason, FailureClass failure_class) {
  instance.state = Instance::State::done;
  release(instance.claim);
  instance.summary.key = instance.planned.key;
  instance.summary.job_id = instance.node->job->id;
  instance.summary.name = instance.planned.name;
  instance.summary.store_id = instance.job_row;
  instance.summary.matrix = instance.planned.matrix;
  instance.summary.labels = instance.labels;
  instance.summary.conclusion = conclusion;
  instance.summary.reason = reason;
  // A job that never ran failed for its plan (the code's) unless the caller knows better; one
  // cancelled before it started was cancelled.
  if (conclusion == Conclusion::cancelled) failure_class = FailureClass::cancelled;
  if (conclusion != Conclusion::failure && conclusion != Conclusion::cancelled)
    failure_class = FailureClass::none;
  instance.summary.failure_class = failure_class;
  instance.summary.failure_evidence = failure_class == FailureClass::none ? "" : reason;
  // A job that waited and never started (cancelled in the queue) keeps what it waited for.
  instance.summary.queue = instance.queue.end(seams_.clock.now(), /*started=*/false);
  recorder_.finish_job(instance.job_row, {.conclusion = conclusion,
                                          .message = reason,
                                          .failure_class = instance.summary.failure_class,
                                          .failure_evidence = instance.summary.failure_evidence,
                                          .queue = instance.summary.queue});
  if (conclusion == Conclusion::failure) observer_.job_line(shown(instance), "error", reason);
  finished_to_observer(instance);
}

void Scheduler::on_instance_finished(WorkflowState& wf, Node& node, Instance& instance,
                                     JobOutcome outcome) {
  if (!instance.on_slurm) --running_;
  --node.running;
  instance.state = Instance::State::done;
  JobSummary& summary = outcome.summary;
  // A job the scheduler cancelled stopped for the scheduler's reason (fail-fast, concurrency,
  // Ctrl-C), which the job itself cannot know.
  if (summary.conclusion == Conclusion::cancelled && instance.stop.kind != StopReason::Kind::none) {
    if (summary.reason.empty()) summary.reason = instance.stop.text;
    summary.failure_evidence = instance.stop.text;
    outcome.stop = instance.stop;
  }
  summary.order = ++finished_count_;
  summary.queue = std::move(instance.summary.queue);  // written when it started (launch)
  instance.summary = std::move(summary);
  release(instance.claim);
  instance.gpus.clear();
  finished_to_observer(instance);
  if (instance.summary.conclusion == Conclusion::failure && node.plan.fail_fast &&
      !instance.continue_on_error) {
    for (auto& sibling : node.instances)
      if (&sibling != &instance)
        cancel_instance(sibling, StopReason::fail_fast(instance.planned.key));
  }
  // fail-fast of a matrix of calls: a failed called job cancels the caller's other calls.
  if (instance.summary.conclusion == Conclusion::failure && !instance.continue_on_error)
    for (CallScope* scope = node.scope; scope; scope = scope->caller->scope) {
      Node& caller = *scope->caller;
      if (!caller.plan.fail_fast || caller.calls.size() < 2) continue;
      for (CallScope* other : caller.calls)
        if (other != scope && !other->cancelled)
          cancel_scope(*other, StopReason::fail_fast(instance.planned.key));
    }
  maybe_finish_node(wf, node);
}

void Scheduler::maybe_finish_node(WorkflowState& wf, Node& node) {
  // A node still waiting for its needs is decided by resolve(), also in a cancelled run (where
  // an `always()` job still runs): it has no instances yet, and is not done for that.
  if (node.state != Node::State::planned) return;
  if (!node.calls.empty()) return maybe_finish_caller(wf, node);
  for (const auto& instance : node.instances)
    if (instance.state != Instance::State::done) return;
  bool any_failure = false, any_cancelled = false, all_skipped = true;
  std::vector<const Instance*> by_finish;
  node.reused = node.inputs_reused && !node.instances.empty();
  for (const auto& instance : node.instances) {
    if (!instance.reused) node.reused = false;
    const auto& summary = instance.summary;
    if (summary.conclusion == Conclusion::failure && !instance.continue_on_error)
      any_failure = true;
    if (summary.conclusion == Conclusion::cancelled) any_cancelled = true;
    if (summary.conclusion != Conclusion::skipped) all_skipped = false;
    by_finish.push_back(&instance);
    wf.finished.push_back(summary);
  }
  // Several instances may set an output: the last one to finish that set it (non-empty)
  // wins, as on GitHub.
  std::stable_sort(by_finish.begin(), by_finish.end(), [](const Instance* a, const Instance* b) {
    return a->summary.order < b->summary.order;
  });
  for (const Instance* instance : by_finish)
    for (const auto& [key, value] : instance->summary.outputs)
      if (!value.empty()) node.outputs[key] = value;
  if (any_failure)
    node.result = Conclusion::failure;
  else if (any_cancelled)
    node.result = Conclusion::cancelled;
  else if (all_skipped)
    node.result = Conclusion::skipped;
  else
    node.result = Conclusion::success;
  node.state = Node::State::done;
  if (workflow_done(wf)) release(wf.claim);
  if (node.scope) maybe_finish_node(wf, *node.scope->caller);
}

// A caller job is done when every job of each of its calls is: it failed when one of them
// failed, and its outputs are the called workflow's (the last call to set one wins).
void Scheduler::maybe_finish_caller(WorkflowState& wf, Node& node) {
  for (const CallScope* scope : node.calls)
    for (const Node* child : scope->nodes)
      if (child->state != Node::State::done) return;
  bool any_failure = false, any_cancelled = false, all_skipped = true;
  node.reused = node.inputs_reused;
  for (CallScope* scope : node.calls) {
    expr::Value jobs = expr::Value::object();
    for (const Node* child : scope->nodes) {
      if (!child->reused) node.reused = false;
      if (child->result == Conclusion::failure) any_failure = true;
      if (child->result == Conclusion::cancelled) any_cancelled = true;
      if (child->result != Conclusion::skipped) all_skipped = false;
      expr::Value outputs = expr::Value::object();
      for (const auto& [key, value] : child->outputs) outputs[key] = value;
      jobs[child->job->id] = {{"result", std::string(store::to_string(child->result))},
                              {"outputs", outputs}};
    }
    expr::Context context;
    context.contexts = scope->base_contexts;
    std::vector<std::string> warnings;
    const auto* call = scope->workflow->workflow.find_trigger("workflow_call");
    for (const auto& [key, value] : evaluate_call_outputs(*call, context, jobs, warnings))
      if (!value.empty()) node.outputs[key] = value;
    for (const auto& warning : warnings) observer_.warning(warning);
    release(scope->claim);
  }
  node.result = any_failure     ? Conclusion::failure
                : any_cancelled ? Conclusion::cancelled
                : all_skipped   ? Conclusion::skipped
                                : Conclusion::success;
  node.state = Node::State::done;
  if (workflow_done(wf)) release(wf.claim);
  if (node.scope) maybe_finish_node(wf, *node.scope->caller);
}

WorkflowRunSummary Scheduler::finish_workflow(WorkflowState& wf) {
  WorkflowRunSummary summary;
  summary.run_id = wf.run.id;
  summary.attempt = wf.run.attempt;
  summary.workflow_path = wf.selected->path;
  summary.workflow_name = wf.selected->name;
  summary.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(seams_.clock.now() - wf.started);
  summary.jobs = wf.finished;
  std::stable_sort(
      summary.jobs.begin(), summary.jobs.end(), [](const JobSummary& a, const JobSummary& b) {
        auto rank = [](const JobSummary& j) { return j.order == 0 ? 1 << 30 : j.order; };
        return rank(a) < rank(b);
      });
  bool failed = false, cancelled = wf.cancelled;
  for (const auto& node : wf.nodes) {
    if (node->result == Conclusion::failure) failed = true;
    if (node->result == Conclusion::cancelled) cancelled = true;
  }
  summary.conclusion = failed      ? Conclusion::failure
                       : cancelled ? Conclusion::cancelled
                                   : Conclusion::success;
  store::RunStatus status = failed      ? store::RunStatus::failure
                            : cancelled ? store::RunStatus::cancelled
                                        : store::RunStatus::success;
  recorder_.finish_run(wf.run.id, status);
  return summary;
}

}  // namespace kiln::engine
