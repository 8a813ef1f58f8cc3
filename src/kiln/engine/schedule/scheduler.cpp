// The scheduler's loop (scheduler.h): starting ready jobs on threads and finishing them, and
// engine::run, which plans a run and hands it to the scheduler.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "kiln/container/gpu_flags.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/execute/job_runner.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/engine/plan/contexts.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/plan/workflow_call.h"
#include "kiln/engine/record/masking.h"
#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/engine/schedule/scheduler.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/gpu/allocator.h"
#include "kiln/gpu/request.h"
#include "kiln/gpu/topology.h"
#include "kiln/plan/concurrency.h"
#include "kiln/plan/trigger.h"
#include "kiln/store/process_identity.h"
#include "kiln/store/store.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {
namespace {

std::atomic<bool> g_cancel_requested{false};

}  // namespace

Scheduler::Scheduler(const RunOptions& options, const RepositoryInfo& repo,
                     const plan::Event& event, store::Store& store, RunObserver& observer)
    : options_(options),
      repo_(repo),
      event_(event),
      store_(store, masker_),
      observer_(observer, masker_),
      gpus_(options) {
  max_parallel_ = options.max_parallel > 0
                      ? options.max_parallel
                      : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  kiln_dir_ = repo.root / ".kiln";
  for (const auto& [name, value] : options.secrets) masker_.add(value);
  // `kiln serve` shares one registry between its engine calls; `kiln run` has its own.
  groups_ = options.concurrency ? options.concurrency : std::make_shared<ConcurrencyRegistry>();
  owner_ = groups_->join(*this);
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

Result<RunReport> Scheduler::run(const Selection& selection) {
  for (const auto& [uses, called] : selection.called) {
    auto selected = std::make_unique<SelectedWorkflow>();
    selected->path = called->display;
    selected->workflow = called->workflow;
    selected->name =
        called->workflow.name ? called->workflow.name->value : called->display.string();
    called_[uses] = std::move(selected);
  }
  unresolved_ = selection.unresolved;
  // Two workflows with a job of the same id: their lines are told apart as [workflow/job].
  std::map<std::string, int> id_count;
  for (const auto& selected : selection.triggered)
    for (const auto& job : selected.workflow.jobs) ++id_count[job.id];
  for (const auto& selected : selection.triggered) {
    bool shared = std::any_of(selected.workflow.jobs.begin(), selected.workflow.jobs.end(),
                              [&](const auto& job) { return id_count[job.id] > 1; });
    KILN_TRY_VOID(start_workflow(selected, shared ? selected.path.stem().string() + "/" : ""));
  }
  loop();
  RunReport report;
  report.not_triggered = selection.not_triggered;
  for (auto& wf : workflows_) report.runs.push_back(finish_workflow(*wf));
  mask_report(masker_, report);
  return report;
}

// A job of the same workflow file (and the same call of it) as `from`.
Node* Scheduler::find_node(WorkflowState& wf, const std::string& id, const Node& from) {
  for (auto& node : wf.nodes)
    if (node->scope == from.scope && node->job->id == id) return node.get();
  return nullptr;
}

// Everything (request_cancel) or only this run (RunOptions::cancel) is to be cancelled.
bool Scheduler::cancel_requested() const {
  return g_cancel_requested || (options_.cancel && options_.cancel->load());
}

// Runs until every node is done.
void Scheduler::loop() {
  std::unique_lock lock(mutex_);
  bool cancel_propagated = false;
  while (true) {
    if (cancel_requested() && !cancel_propagated) {
      cancel_propagated = true;
      cancel_everything("cancelled (interrupt)");
    }
    take_remote_decisions();
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
    if (all_done()) break;
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
  lock.unlock();
  for (auto& wf : workflows_)
    for (auto& node : wf->nodes)
      for (auto& instance : node->instances)
        if (instance.thread.joinable()) instance.thread.join();
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

// Starts queued instances while slots are free, in plan order (FIFO). GPU jobs go through
// one gpu::QueuePass: the first that must wait reserves its GPUs, later ones backfill around
// them.
void Scheduler::start_ready() {
  std::optional<gpu::QueuePass> pass;
  for (auto& wf : workflows_)
    for (auto& node : wf->nodes)
      for (auto& instance : node->instances) {
        if (instance.state != Instance::State::queued) continue;
        if (running_ >= max_parallel_) return;
        if (node->plan.max_parallel > 0 && node->running >= node->plan.max_parallel) continue;
        if (!claim(instance.claim)) continue;
        if (!place_on_gpus(instance, pass)) continue;
        launch(*wf, *node, instance);
      }
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
  return fmt::format(
      "{}-{}",
      options_.job_token_prefix.empty() ? exec::new_job_token() : options_.job_token_prefix,
      instance.job_row);
}

void Scheduler::launch(WorkflowState& wf, Node& node, Instance& instance) {
  instance.state = Instance::State::running;
  ++running_;
  ++node.running;
  JobSetup setup;
  setup.options = &options_;
  setup.repo = &repo_;
  setup.event = &event_;
  setup.store = &store_;
  setup.observer = &observer_;
  setup.shown_key = shown(instance);
  setup.masker = &masker_;
  setup.workflow = node.scope ? node.scope->workflow : wf.selected;
  setup.triggered = wf.selected;
  setup.job = node.job;
  setup.run_id = wf.run.id;
  setup.run_number = wf.run.number;
  setup.run_attempt = wf.run.attempt;
  setup.job_row = instance.job_row;
  setup.instance = instance.planned;
  setup.labels = instance.labels;
  setup.contexts = node.scope ? node.scope->base_contexts : wf.base_contexts;
  setup.contexts["needs"] = needs_context(wf, node);
  setup.contexts["matrix"] = instance.planned.matrix.is_null()
                                 ? expr::Value::object()
                                 : expr::Value::parse(instance.planned.matrix.dump());
  setup.contexts["strategy"] = {
      {"fail-fast", node.plan.fail_fast},
      {"job-index", instance.planned.index},
      {"job-total", instance.planned.total},
      {"max-parallel",
       node.plan.max_parallel > 0 ? node.plan.max_parallel : instance.planned.total}};
  setup.workflow_env = node.scope ? node.scope->env : wf.env;
  setup.gpu_env = gpu_environment(instance);
  setup.job_token = instance.token;
  if (!instance.gpus.empty())
    setup.after_job = [this, token = instance.token] { return gpus_.after_job(token); };
  if (!instance.gpus.empty())
    setup.set_gpu_holder = [this, token = instance.token](const std::string& holder) {
      (void)gpus_.set_holder(token, holder);
    };
  setup.gpus = instance.gpus;
  setup.telemetry = options_.gpu_telemetry;
  if (!instance.gpus.empty() && options_.gpu_telemetry.enabled)
    setup.make_sampler = [this] { return gpus_.make_sampler(); };
  setup.gpu_memory_budget_mib = instance.gpu_request.memory_budget_mib > 0
                                    ? instance.gpu_request.memory_budget_mib
                                    : options_.gpu_telemetry.memory_budget_mib.value_or(0);
  setup.kiln_dir = kiln_dir_;
  setup.artifact_root = artifact_root(wf.run.id);
  setup.cancel = &instance.cancel;
  observer_.job_started(shown(instance));
  instance.thread = std::thread([this, setup, &wf, &node, &instance] {
    JobSummary summary = run_job(setup);
    std::lock_guard lock(mutex_);
    on_instance_finished(wf, node, instance, std::move(summary));
  });
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

void request_cancel() { g_cancel_requested = true; }

int RunReport::exit_code() const {
  for (const auto& run : runs)
    if (run.conclusion != Conclusion::success) return 1;
  return 0;
}

Result<RunReport> run(const RunOptions& options, store::Store& store, RunObserver& observer) {
  KILN_TRY(auto repo, inspect_repository(options.repository));
  // The working copy runs, as act runs it: the workflows are read from the work tree, so
  // actions/checkout gives the work tree too, uncommitted changes included, and says so.
  KILN_TRY(repo.work_tree_sha, snapshot_work_tree(repo));
  if (!repo.work_tree_sha.empty())
    observer.warning(fmt::format(
        "the work tree has uncommitted changes: this run uses them (the workflow files as they "
        "are, and actions/checkout of {} gives snapshot {} of the work tree); commit them to run "
        "HEAD alone",
        repo.head_sha.substr(0, 12), repo.work_tree_sha.substr(0, 12)));
  // A re-run runs the earlier run's workflow file again.
  RunOptions effective = options;
  std::optional<store::Run> earlier;
  std::vector<store::Job> earlier_jobs;
  if (options.rerun) {
    KILN_TRY(earlier, store.get_run(options.rerun->run_id));
    KILN_TRY(earlier_jobs, store.list_jobs(earlier->id));
    if (!effective.workflows) {
      std::filesystem::path path = earlier->workflow_path;
      effective.workflows = path.is_absolute() ? path : repo.root / path;
    }
  }
  KILN_TRY(auto event, make_event(effective, repo));
  KILN_TRY(auto selection, select_workflows(effective, repo, event));
  if (workflow::has_errors(selection.diagnostics))
    return std::unexpected(diagnostics_error(selection.diagnostics));
  for (const auto& diagnostic : selection.diagnostics) observer.warning(diagnostic.to_string());
  Scheduler scheduler(effective, repo, event, store, observer);
  if (earlier) scheduler.set_rerun(std::move(*earlier), earlier_jobs, options.rerun->failed_only);
  return scheduler.run(selection);
}

}  // namespace kiln::engine
