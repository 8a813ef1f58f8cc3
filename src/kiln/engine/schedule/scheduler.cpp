// The scheduler's events and its starting of jobs (scheduler.h).

#include "kiln/engine/schedule/scheduler.h"

#include <algorithm>

#include <fmt/format.h>

namespace kiln::engine {

Scheduler::Scheduler(const RunOptions& options, const RepositoryInfo& repo,
                     const plan::Event& event, SchedulerSeams seams)
    : options_(options),
      repo_(repo),
      event_(event),
      seams_(seams),
      observer_(seams.observer),
      recorder_(seams.recorder),
      kiln_dir_(repo.root / ".kiln"),
      max_parallel_(std::max(1, seams.max_parallel)) {
  if (options_.gpu_queue) gpu_queue_owner_ = options_.gpu_queue->join();
}

Scheduler::~Scheduler() {
  if (options_.gpu_queue) options_.gpu_queue->leave(gpu_queue_owner_);
}

// Makes this a re-run of `earlier` (RunOptions::rerun); with failed_only, `earlier_jobs`
// are the jobs whose successes may be reused.
void Scheduler::set_rerun(store::Run earlier, const std::vector<store::Job>& earlier_jobs,
                          bool failed_only) {
  earlier_ = std::move(earlier);
  if (!failed_only) return;
  for (const auto& job : earlier_jobs)
    if (job.status == store::JobStatus::success) reusable_[job.key] = job;
}

Status Scheduler::start(const Selection& selection) {
  for (const auto& [uses, called] : selection.called) {
    auto selected = std::make_unique<SelectedWorkflow>();
    selected->path = called->display;
    selected->workflow = called->workflow;
    selected->name =
        called->workflow.name ? called->workflow.name->value : called->display.string();
    called_[uses] = std::move(selected);
  }
  unresolved_ = selection.unresolved;
  not_triggered_ = selection.not_triggered;
  // Two workflows with a job of the same id: their lines are told apart as [workflow/job].
  std::map<std::string, int> id_count;
  for (const auto& selected : selection.triggered)
    for (const auto& job : selected.workflow.jobs) ++id_count[job.id];
  for (const auto& selected : selection.triggered) {
    bool shared = std::any_of(selected.workflow.jobs.begin(), selected.workflow.jobs.end(),
                              [&](const auto& job) { return id_count[job.id] > 1; });
    KILN_TRY_VOID(start_workflow(selected, shared ? selected.path.stem().string() + "/" : ""));
  }
  return {};
}

void Scheduler::advance() {
  acquire_workflow_groups();
  bool changed = true;
  while (changed) {
    changed = false;
    // By index: resolving a caller job appends the called workflow's jobs.
    for (auto& wf : workflows_)
      for (size_t i = 0; i < wf->nodes.size(); ++i) {
        Node& node = *wf->nodes[i];
        if (node.state == Node::State::waiting && needs_done(*wf, node)) {
          resolve(*wf, node);
          changed = true;
        }
      }
  }
  start_ready();
  report_progress();
}

void Scheduler::job_finished(JobId id, JobOutcome outcome) {
  auto it = launched_.find(id);
  if (it == launched_.end()) return;
  Instance& instance = *it->second;
  launched_.erase(it);
  on_instance_finished(*instance.node->workflow, *instance.node, instance, std::move(outcome));
}

void Scheduler::cancel_all() {
  if (interrupted_) return;
  interrupted_ = true;
  cancel_everything(StopReason::interrupt());
}

RunReport Scheduler::report() {
  RunReport report;
  report.not_triggered = not_triggered_;
  for (auto& wf : workflows_) report.runs.push_back(finish_workflow(*wf));
  return report;
}

// A job of the same workflow file (and the same call of it) as `from`.
Node* Scheduler::find_node(WorkflowState& wf, const std::string& id, const Node& from) {
  for (auto& node : wf.nodes)
    if (node->scope == from.scope && node->job->id == id) return node.get();
  return nullptr;
}

bool Scheduler::all_done() const {
  for (const auto& wf : workflows_)
    for (const auto& node : wf->nodes)
      if (node->state != Node::State::done) return false;
  return true;
}

bool Scheduler::needs_done(WorkflowState& wf, const Node& node) {
  if (!wf.claim.group.empty() && !wf.claim.granted && !wf.cancelled) return false;
  if (node.scope && !node.scope->claim.group.empty() && !node.scope->claim.granted &&
      !in_cancelled_call(node.scope) && !wf.cancelled)
    return false;
  for (const auto& need : node.job->needs) {
    Node* dep = find_node(wf, need.value, node);
    if (dep && dep->state != Node::State::done) return false;
  }
  return true;
}

bool Scheduler::workflow_done(const WorkflowState& wf) const {
  return std::all_of(wf.nodes.begin(), wf.nodes.end(),
                     [](const auto& node) { return node->state == Node::State::done; });
}

// The job as the observer shows it: its key, or "workflow/key" (WorkflowState::shown_prefix).
std::string Scheduler::shown(const Instance& instance) {
  return instance.node->workflow->shown_prefix + instance.planned.key;
}

void Scheduler::finished_to_observer(const Instance& instance) {
  if (instance.node->workflow->shown_prefix.empty())
    return observer_.job_finished(instance.summary);
  JobSummary shown_summary = instance.summary;
  shown_summary.key = shown(instance);
  observer_.job_finished(shown_summary);
}

std::string Scheduler::job_token(const Instance& instance) const {
  return fmt::format("{}-{}", seams_.job_token_prefix, instance.job_row);
}

void Scheduler::launch(WorkflowState& wf, Node& node, Instance& instance) {
  instance.state = Instance::State::running;
  instance.summary.queue = instance.queue.end(seams_.clock.now(), /*started=*/true);
  if (!instance.gpus.empty()) instance.summary.queue.gpu_model = instance.gpus.front().model;
  recorder_.record_queue(instance.job_row, instance.summary.queue);
  if (!instance.on_slurm) ++running_;
  ++node.running;
  JobSpec spec;
  spec.workflow = node.scope ? *node.scope->workflow : *wf.selected;
  spec.triggered = *wf.selected;
  spec.job_id = node.job->id;
  spec.shown_key = shown(instance);
  spec.run_id = wf.run.id;
  spec.run_number = wf.run.number;
  spec.run_attempt = wf.run.attempt;
  spec.job_row = instance.job_row;
  spec.instance = instance.planned;
  spec.labels = instance.labels;
  spec.contexts = node.scope ? node.scope->base_contexts : wf.base_contexts;
  spec.contexts["needs"] = needs_context(wf, node);
  spec.contexts["matrix"] = instance.planned.matrix.is_null()
                                ? expr::Value::object()
                                : expr::Value::parse(instance.planned.matrix.dump());
  spec.contexts["strategy"] = {
      {"fail-fast", node.plan.fail_fast},
      {"job-index", instance.planned.index},
      {"job-total", instance.planned.total},
      {"max-parallel",
       node.plan.max_parallel > 0 ? node.plan.max_parallel : instance.planned.total}};
  spec.workflow_env = node.scope ? node.scope->env : wf.env;
  spec.gpu_env = seams_.placer.environment(instance.gpus);
  spec.job_token = instance.token;
  spec.gpus = instance.gpus;
  spec.gpu_request = instance.gpu_request;
  spec.gpu_memory_budget_mib = instance.gpu_request.memory_budget_mib > 0
                                   ? instance.gpu_request.memory_budget_mib
                                   : options_.gpu_telemetry.memory_budget_mib.value_or(0);
  spec.artifact_root = artifact_root(wf.run.id);
  instance.id = ++next_job_id_;
  launched_[instance.id] = &instance;
  observer_.job_started(shown(instance));
  seams_.executor.start(instance.id, std::move(spec), seams_.events);
}

void Scheduler::report_progress() {
  int done = 0, total = 0;
  std::vector<std::string> running;
  for (const auto& wf : workflows_)
    for (const auto& node : wf->nodes) {
      if (node->state == Node::State::waiting) {
        ++total;
        continue;
      }
      for (const auto& instance : node->instances) {
        ++total;
        if (instance.state == Instance::State::done) ++done;
        if (instance.state == Instance::State::running) running.push_back(shown(instance));
      }
    }
  if (done != last_done_ || running != last_running_) {
    last_done_ = done;
    last_running_ = running;
    observer_.progress(done, total, running);
  }
}

}  // namespace kiln::engine
