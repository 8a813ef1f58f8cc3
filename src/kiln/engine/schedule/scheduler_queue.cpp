// The order of the queue (scheduler.h): priority classes (kiln.yml priority:) with aging, FIFO
// within a class, GPU jobs of higher classes in other engine calls, and each job's queue time.

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/schedule/scheduler.h"

namespace kiln::engine {

void Scheduler::enqueue(WorkflowState& wf, Node& node, Instance& instance) {
  config::PriorityFacts facts;
  facts.repository = options_.repository_name.empty() ? repo_.name : options_.repository_name;
  // A pull request's branch is the one it goes into, as on.pull_request.branches reads it.
  facts.branch = event_.name.starts_with("pull_request") ? event_.base_ref
                 : event_.is_branch()                    ? event_.ref_name()
                                                         : "";
  facts.event = event_.name;
  facts.labels = instance.labels;
  auto placed = options_.priority.classify(facts);
  instance.priority_rank = placed.rank;
  const auto now = seams_.clock.now();
  instance.queue.queued(now, seams_.clock.wall_ms(), std::move(placed.name));
  // A first job of a run that waited for its workflow's concurrency group waited since the run.
  if (!node.scope && node.job->needs.empty() && !wf.claim.group.empty())
    instance.queue.waited_before(
        WaitReason::concurrency,
        std::chrono::duration_cast<std::chrono::milliseconds>(now - wf.started));
}

int Scheduler::effective_rank(const Instance& instance,
                              std::chrono::steady_clock::time_point now) const {
  return options_.priority.effective_rank(
      instance.priority_rank,
      std::chrono::duration_cast<std::chrono::milliseconds>(now - instance.queue.since()));
}

GpuQueue::Waiter Scheduler::waiter(const Instance& instance) const {
  return {.rank = instance.priority_rank,
          .priority = instance.queue.priority(),
          .since = instance.queue.since(),
          .job = fmt::format("{} (run {})", shown(instance), instance.node->workflow->run.id)};
}

bool Scheduler::outranked(Instance& instance, int rank, std::chrono::steady_clock::time_point now) {
  if (!options_.gpu_queue || !instance.gpu_request.wants_gpus() || instance.on_slurm) return false;
  auto ahead = options_.gpu_queue->ahead_of(gpu_queue_owner_, rank, now, options_.priority);
  if (!ahead) return false;
  if (!instance.said_outranked) {
    instance.said_outranked = true;
    observer_.job_line(shown(instance), "kiln",
                       fmt::format("waiting for GPUs: {} of priority class {} goes first (this "
                                   "job's class: {})",
                                   ahead->job, ahead->priority, instance.queue.priority()));
  }
  return true;
}

void Scheduler::start_ready() {
  seams_.placer.begin_pass();
  const auto now = seams_.clock.now();
  // By class after aging, first come first served within one (the stable sort keeps plan order
  // among jobs queued at the same moment). A job aged into a higher class goes before the ones
  // queued there after it.
  std::vector<std::pair<int, Instance*>> queue;
  for (auto& wf : workflows_)
    for (auto& node : wf->nodes)
      for (auto& instance : node->instances)
        if (instance.state == Instance::State::queued)
          queue.emplace_back(effective_rank(instance, now), &instance);
  std::stable_sort(queue.begin(), queue.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second->queue.since() < b.second->queue.since();
  });
  std::vector<GpuQueue::Waiter> waiting;  // this call's GPU jobs still waiting, for the others
  for (auto& [rank, entry] : queue) {
    Instance& instance = *entry;
    // An earlier one's concurrency group may have cancelled it.
    if (instance.state != Instance::State::queued) continue;
    Node& node = *instance.node;
    // --max-parallel bounds the jobs on this host; Slurm queues the ones sent to it.
    instance.on_slurm = options_.slurm && options_.slurm->pool_for(instance.labels);
    if (!instance.on_slurm && running_ >= max_parallel_) {
      instance.queue.held(WaitReason::slots, now);
      continue;
    }
    if (node.plan.max_parallel > 0 && node.running >= node.plan.max_parallel) {
      instance.queue.held(WaitReason::max_parallel, now);
      continue;
    }
    if (!claim(instance.claim)) {
      instance.queue.held(WaitReason::concurrency, now);
      continue;
    }
    if (outranked(instance, rank, now)) {
      instance.queue.held(WaitReason::priority, now);
      waiting.push_back(waiter(instance));
      continue;
    }
    if (!place_on_gpus(instance)) {
      if (instance.state != Instance::State::queued) continue;  // failed: never placeable
      instance.queue.held(WaitReason::gpus, now);
      waiting.push_back(waiter(instance));
      continue;
    }
    launch(*node.workflow, node, instance);
  }
  if (options_.gpu_queue) options_.gpu_queue->set_waiting(gpu_queue_owner_, std::move(waiting));
}

}  // namespace kiln::engine
