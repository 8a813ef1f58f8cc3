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
  auto decision = groups_->request(owner_, claim.group, claim.id, claim.cancel_in_progress);
  claim.requested = true;
  claim.granted = decision.start_now;
  for (const auto& id : decision.cancel)
    cancel_claimant(id,
                    fmt::format("cancelled: a newer run in concurrency group '{}'", claim.group));
  return claim.granted;
}

void Scheduler::release(GroupClaim& claim) {
  if (!claim.requested) return;
  claim.requested = false;
  claim.granted = false;
  auto promoted = groups_->release(owner_, claim.group, claim.id);
  if (promoted) grant(*promoted);
}

// A claim of this scheduler holds its group now.
void Scheduler::grant(const std::string& id) {
  if (auto it = instance_claims_.find(id); it != instance_claims_.end())
    it->second->claim.granted = true;
  if (auto it = workflow_claims_.find(id); it != workflow_claims_.end())
    it->second->claim.granted = true;
  if (auto it = scope_claims_.find(id); it != scope_claims_.end()) it->second->claim.granted = true;
  changed_.notify_all();
}

// ConcurrencyRegistry::Listener: another engine call of this process (another trigger of
// `kiln serve`) released a group this scheduler waits for, or replaced or cancels one of its
// claims. Queued here and applied by the loop under mutex_ (take_remote_decisions).
void Scheduler::granted(const std::string& id) {
  {
    std::lock_guard lock(remote_mutex_);
    remote_.push_back({id, ""});
  }
  changed_.notify_all();
}

void Scheduler::cancelled(const std::string& id, const std::string& group) {
  {
    std::lock_guard lock(remote_mutex_);
    remote_.push_back({id, group});
  }
  changed_.notify_all();
}

void Scheduler::take_remote_decisions() {
  std::vector<std::pair<std::string, std::string>> decisions;
  {
    std::lock_guard lock(remote_mutex_);
    decisions.swap(remote_);
  }
  for (const auto& [id, group] : decisions) {
    if (group.empty())
      grant(id);
    else
      cancel_claimant(id, fmt::format("cancelled: a newer run in concurrency group '{}'", group));
  }
}

void Scheduler::cancel_claimant(const std::string& id, const std::string& reason) {
  if (auto it = instance_claims_.find(id); it != instance_claims_.end()) {
    Instance& instance = *it->second;
    if (instance.state == Instance::State::queued) {
      finish_instance_now(instance, Conclusion::cancelled, reason);
      maybe_finish_node(*instance.node->workflow, *instance.node);
    } else if (instance.state == Instance::State::running) {
      instance.cancel_reason = reason;
      instance.cancel.cancel();
    }
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
void Scheduler::cancel_scope(CallScope& scope, const std::string& reason) {
  scope.cancelled = true;
  WorkflowState& wf = *scope.caller->workflow;
  std::vector<Node*> affected;
  for (auto& node : wf.nodes) {
    bool inside = false;
    for (const CallScope* s = node->scope; s && !inside; s = s->caller->scope) inside = s == &scope;
    if (inside) affected.push_back(node.get());
  }
  for (Node* node : affected)
    for (auto& instance : node->instances) {
      if (instance.state == Instance::State::queued) {
        finish_instance_now(instance, Conclusion::cancelled, reason);
      } else if (instance.state == Instance::State::running) {
        instance.cancel_reason = reason;
        instance.cancel.cancel();
      }
    }
  for (Node* node : affected) maybe_finish_node(wf, *node);
}

void Scheduler::cancel_workflow(WorkflowState& wf, const std::string& reason) {
  for (auto& node : wf.nodes)
    for (auto& instance : node->instances) {
      if (instance.state == Instance::State::queued) {
        finish_instance_now(instance, Conclusion::cancelled, reason);
      } else if (instance.state == Instance::State::running) {
        instance.cancel_reason = reason;
        instance.cancel.cancel();
      }
    }
  for (auto& node : wf.nodes) maybe_finish_node(wf, *node);
}

void Scheduler::cancel_everything(const std::string& reason) {
  for (auto& wf : workflows_) {
    wf->cancelled = true;
    cancel_workflow(*wf, reason);
  }
}

}  // namespace kiln::engine
