// Concurrency groups and cancels (scheduler.h): claims on groups shared through the
// ConcurrencyRegistry, the decisions of other engine calls, and cancelling instances, calls and
// whole runs.

#include <fmt/format.h>

#include "kiln/engine/schedule/scheduler.h"

namespace kiln::engine {

// Workflow-level concurrency: a workflow starts no job until it holds its group.
void Scheduler::acquire_workflow_groups() {
  for (auto& wf : workflows_) {
    if (wf->cancelled) continue;
    claim(wf->claim);
    for (auto& scope : wf->scopes) claim(scope->claim);
  }
}

// Asks for a claim's group once; cancels what the answer says. True when the claim holds.
bool Scheduler::claim(GroupClaim& claim) {
  if (claim.group.empty() || claim.granted) return true;
  if (claim.requested) return false;
  auto decision =
      seams_.groups.request(seams_.group_owner, claim.group, claim.id, claim.cancel_in_progress);
  claim.requested = true;
  claim.granted = decision.start_now;
  for (const auto& id : decision.cancel) cancel_claimant(id, StopReason::concurrency(claim.group));
  return claim.granted;
}

void Scheduler::release(GroupClaim& claim) {
  if (!claim.requested) return;
  claim.requested = false;
  claim.granted = false;
  auto promoted = seams_.groups.release(seams_.group_owner, claim.group, claim.id);
  if (promoted) grant(*promoted);
}

// A claim of this scheduler holds its group now.
void Scheduler::grant(const std::string& id) {
  if (auto it = instance_claims_.find(id); it != instance_claims_.end())
    it->second->claim.granted = true;
  if (auto it = workflow_claims_.find(id); it != workflow_claims_.end())
    it->second->claim.granted = true;
  if (auto it = scope_claims_.find(id); it != scope_claims_.end()) it->second->claim.granted = true;
}

void Scheduler::granted(const std::string& id) { grant(id); }

void Scheduler::cancelled(const std::string& id, const std::string& group) {
  cancel_claimant(id, StopReason::concurrency(group));
}

void Scheduler::cancel_instance(Instance& instance, const StopReason& reason) {
  if (instance.state == Instance::State::queued) {
    finish_instance_now(instance, Conclusion::cancelled, reason.text);
  } else if (instance.state == Instance::State::running) {
    instance.stop = reason;
    seams_.executor.cancel(instance.id, reason);
  }
}

void Scheduler::cancel_claimant(const std::string& id, const StopReason& reason) {
  if (auto it = instance_claims_.find(id); it != instance_claims_.end()) {
    Instance& instance = *it->second;
    const bool queued = instance.state == Instance::State::queued;
    cancel_instance(instance, reason);
    if (queued) maybe_finish_node(*instance.node->workflow, *instance.node);
  }
  if (auto it = workflow_claims_.find(id); it != workflow_claims_.end()) {
    it->second->cancelled = true;
    cancel_workflow(*it->second, reason);
  }
  if (auto it = scope_claims_.find(id); it != scope_claims_.end())
    cancel_scope(*it->second, reason);
}

// True when the call a node belongs to, or one around it, was cancelled.
bool Scheduler::in_cancelled_call(const CallScope* scope) {
  for (; scope; scope = scope->caller->scope)
    if (scope->cancelled) return true;
  return false;
}

// Cancels one call of a reusable workflow: its jobs (and those of the calls inside it) that
// are queued or running; the ones still waiting are cancelled when their needs are done.
void Scheduler::cancel_scope(CallScope& scope, const StopReason& reason) {
  scope.cancelled = true;
  WorkflowState& wf = *scope.caller->workflow;
  std::vector<Node*> affected;
  for (auto& node : wf.nodes) {
    bool inside = false;
    for (const CallScope* s = node->scope; s && !inside; s = s->caller->scope) inside = s == &scope;
    if (inside) affected.push_back(node.get());
  }
  for (Node* node : affected)
    for (auto& instance : node->instances) cancel_instance(instance, reason);
  for (Node* node : affected) maybe_finish_node(wf, *node);
}

void Scheduler::cancel_workflow(WorkflowState& wf, const StopReason& reason) {
  for (auto& node : wf.nodes)
    for (auto& instance : node->instances) cancel_instance(instance, reason);
  for (auto& node : wf.nodes) maybe_finish_node(wf, *node);
}

void Scheduler::cancel_everything(const StopReason& reason) {
  for (auto& wf : workflows_) {
    wf->cancelled = true;
    cancel_workflow(*wf, reason);
  }
}

}  // namespace kiln::engine
