// The scheduler: turns the selected workflows into job instances as their needs finish, starts
// them on threads up to --max-parallel, and applies fail-fast, strategy.max-parallel and
// concurrency groups. Everything here happens under one mutex; jobs run outside it.

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
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kiln/engine/contexts.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/job_runner.h"
#include "kiln/engine/planner.h"
#include "kiln/engine/repository.h"
#include "kiln/gpu/allocator.h"
#include "kiln/gpu/discover.h"
#include "kiln/gpu/request.h"
#include "kiln/plan/concurrency.h"
#include "kiln/plan/trigger.h"
#include "kiln/store/process_identity.h"
#include "kiln/store/store.h"

namespace kiln::engine {
namespace {

std::atomic<bool> g_cancel_requested{false};

using Clock = std::chrono::steady_clock;

struct WorkflowState;

// A run's or job's place in a concurrency group (plan::ConcurrencyGroups decides).
struct GroupClaim {
  std::string id;     // unique in this invocation: "run:3", "job:17"
  std::string group;  // evaluated; empty: no group
  bool cancel_in_progress = false;
  bool requested = false;
  bool granted = false;
};

struct Instance {
  PlannedInstance planned;
  struct Node* node = nullptr;
  std::int64_t job_row = 0;
  enum class State { queued, running, done } state = State::queued;
  exec::CancelToken cancel;
  std::string cancel_reason;
  GroupClaim claim;                // job-level concurrency group
  bool continue_on_error = false;  // job-level, evaluated with the instance's matrix
  std::vector<std::string> labels;
  gpu::GpuRequest gpu_request;  // from the labels; wants_gpus() false: none
  std::vector<int> gpus;        // granted indexes while it runs
  JobSummary summary;
  std::thread thread;
};

struct Node {
  const workflow::Job* job = nullptr;
  WorkflowState* workflow = nullptr;
  enum class State { waiting, planned, done } state = State::waiting;
  PlannedJob plan;
  std::list<Instance> instances;  // stable addresses
  int running = 0;
  Conclusion result = Conclusion::skipped;
  bool ancestor_failed = false;  // for failure() in a job-level if
  std::map<std::string, std::string> outputs;
};

struct WorkflowState {
  const SelectedWorkflow* selected = nullptr;
  store::Run run;
  std::vector<std::unique_ptr<Node>> nodes;              // file order, only the jobs to run
  expr::Value base_contexts;                             // github, inputs, vars, secrets
  std::vector<std::pair<std::string, std::string>> env;  // evaluated workflow env
  GroupClaim claim;                                      // workflow-level concurrency group
  bool cancelled = false;  // by a newer run of its concurrency group, or Ctrl-C
  Clock::time_point started;
  std::vector<JobSummary> finished;
};

store::JobStatus to_job_status(Conclusion conclusion) {
  switch (conclusion) {
    case Conclusion::success:
      return store::JobStatus::success;
    case Conclusion::failure:
      return store::JobStatus::failure;
    case Conclusion::cancelled:
      return store::JobStatus::cancelled;
    case Conclusion::skipped:
      return store::JobStatus::skipped;
  }
  return store::JobStatus::failure;
}

class Scheduler {
 public:
  Scheduler(const RunOptions& options, const RepositoryInfo& repo, const plan::Event& event,
            store::Store& store, RunObserver& observer)
      : options_(options), repo_(repo), event_(event), store_(store), observer_(observer) {
    max_parallel_ = options.max_parallel > 0
                        ? options.max_parallel
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    kiln_dir_ = repo.root / ".kiln";
    for (const auto& [name, value] : options.secrets) masker_.add(value);
  }

  Result<RunReport> run(const Selection& selection) {
    for (const auto& selected : selection.triggered) {
      KILN_TRY_VOID(start_workflow(selected));
    }
    loop();
    RunReport report;
    report.not_triggered = selection.not_triggered;
    for (auto& wf : workflows_) report.runs.push_back(finish_workflow(*wf));
    return report;
  }

 private:
  Status start_workflow(const SelectedWorkflow& selected) {
    auto state = std::make_unique<WorkflowState>();
    state->selected = &selected;
    state->started = Clock::now();
    store::Run run;
    run.repository = repo_.root.string();
    run.workflow_path = selected.path.string();
    run.workflow_name = selected.name;
    run.event = event_.name;
    run.ref = event_.ref;
    run.sha = event_.sha;
    run.status = store::RunStatus::running;
    run.created_at = store::now_ms();
    run.started_at = run.created_at;
    run.owner = store::current_process();
    run.extra = {{"changed_files", event_.changed_files.size()}};
    KILN_TRY(state->run, store_.create_run(run));

    auto& contexts = state->base_contexts;
    contexts = expr::Value::object();
    contexts["github"] = workflow_github_context(
        repo_, event_, selected.name, selected.path.string(), state->run.id, state->run.number);
    // Dispatch inputs with the workflow's defaults and types applied.
    std::map<std::string, std::string> input_values = event_.inputs;
    if (const auto* trigger = selected.workflow.find_trigger("workflow_dispatch");
        trigger && event_.name == "workflow_dispatch") {
      KILN_TRY(input_values, plan::resolve_dispatch_inputs(*trigger, event_.inputs));
    }
    for (const auto& [key, value] : input_values)
      contexts["github"]["event"]["inputs"][key] = value;
    contexts["inputs"] = typed_inputs(selected.workflow, input_values);
    contexts["vars"] = expr::Value::object();
    expr::Value secrets = expr::Value::object();
    for (const auto& [key, value] : options_.secrets) secrets[key] = value;
    contexts["secrets"] = secrets;

    // Workflow env: evaluated once, in order, each value seeing the ones before.
    expr::Context context;
    context.contexts = contexts;
    context.contexts["env"] = expr::Value::object();
    for (const auto& [key, value] : options_.extra_env) {
      state->env.emplace_back(key, value);
      context.contexts["env"][key] = value;
    }
    for (const auto& [key, text] : selected.workflow.env) {
      auto value = expr::interpolate(text.value, context, text.where);
      if (!value) return std::unexpected(value.error());
      state->env.emplace_back(key, *value);
      context.contexts["env"][key] = *value;
    }
    if (selected.workflow.concurrency) {
      const auto& concurrency = *selected.workflow.concurrency;
      KILN_TRY(state->claim.group,
               expr::interpolate(concurrency.group.value, context, concurrency.group.where));
      if (concurrency.cancel_in_progress) {
        KILN_TRY(state->claim.cancel_in_progress,
                 evaluate_flag(*concurrency.cancel_in_progress, context));
      }
    }

    KILN_TRY(auto job_ids, jobs_to_run(selected.workflow, options_.job_filter));
    for (const auto& id : job_ids) {
      auto node = std::make_unique<Node>();
      node->job = selected.workflow.find_job(id);
      node->workflow = state.get();
      state->nodes.push_back(std::move(node));
    }
    state->claim.id = fmt::format("run:{}", state->run.id);
    workflow_claims_[state->claim.id] = state.get();
    observer_.run_started(selected.name, state->run.id);
    workflows_.push_back(std::move(state));
    return {};
  }

  Node* find_node(WorkflowState& wf, const std::string& id) {
    for (auto& node : wf.nodes)
      if (node->job->id == id) return node.get();
    return nullptr;
  }

  // Runs until every node is done.
  void loop() {
    std::unique_lock lock(mutex_);
    bool cancel_propagated = false;
    while (true) {
      if (g_cancel_requested && !cancel_propagated) {
        cancel_propagated = true;
        cancel_everything("cancelled (interrupt)");
      }
      acquire_workflow_groups();
      bool changed = true;
      while (changed) {
        changed = false;
        for (auto& wf : workflows_)
          for (auto& node : wf->nodes)
            if (node->state == Node::State::waiting && needs_done(*wf, *node)) {
              resolve(*wf, *node);
              changed = true;
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

  bool all_done() const {
    for (const auto& wf : workflows_)
      for (const auto& node : wf->nodes)
        if (node->state != Node::State::done) return false;
    return true;
  }

  bool needs_done(WorkflowState& wf, const Node& node) {
    if (!wf.claim.group.empty() && !wf.claim.granted && !wf.cancelled) return false;
    for (const auto& need : node.job->needs) {
      Node* dep = find_node(wf, need.value);
      if (dep && dep->state != Node::State::done) return false;
    }
    return true;
  }

  // Workflow-level concurrency: a workflow starts no job until it holds its group.
  void acquire_workflow_groups() {
    for (auto& wf : workflows_)
      if (!wf->cancelled) claim(wf->claim);
  }

  // Asks for a claim's group once; cancels what the answer says. True when the claim holds.
  bool claim(GroupClaim& claim) {
    if (claim.group.empty() || claim.granted) return true;
    if (claim.requested) return false;
    auto decision = groups_.request(claim.group, claim.id, claim.cancel_in_progress);
    claim.requested = true;
    claim.granted = decision.start_now;
    for (const auto& id : decision.cancel)
      cancel_claimant(id,
                      fmt::format("cancelled: a newer run in concurrency group '{}'", claim.group));
    return claim.granted;
  }

  void release(GroupClaim& claim) {
    if (!claim.requested) return;
    claim.requested = false;
    claim.granted = false;
    auto promoted = groups_.release(claim.group, claim.id);
    if (!promoted) return;
    if (auto it = instance_claims_.find(*promoted); it != instance_claims_.end())
      it->second->claim.granted = true;
    if (auto it = workflow_claims_.find(*promoted); it != workflow_claims_.end())
      it->second->claim.granted = true;
    changed_.notify_all();
  }

  void cancel_claimant(const std::string& id, const std::string& reason) {
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
  }

  bool workflow_done(const WorkflowState& wf) const {
    return std::all_of(wf.nodes.begin(), wf.nodes.end(),
                       [](const auto& node) { return node->state == Node::State::done; });
  }

  expr::Value needs_context(WorkflowState& wf, const Node& node) {
    expr::Value needs = expr::Value::object();
    for (const auto& need : node.job->needs) {
      Node* dep = find_node(wf, need.value);
      expr::Value outputs = expr::Value::object();
      std::string result = "skipped";
      if (dep) {
        for (const auto& [key, value] : dep->outputs) outputs[key] = value;
        result = std::string(store::to_string(dep->result));
      }
      needs[need.value] = {{"result", result}, {"outputs", outputs}};
    }
    return needs;
  }

  // A node whose needs are done: its `if`, then its instances.
  void resolve(WorkflowState& wf, Node& node) {
    const auto& job = *node.job;
    bool needs_succeeded = true;
    for (const auto& need : job.needs) {
      Node* dep = find_node(wf, need.value);
      if (!dep) continue;
      if (dep->result != Conclusion::success) needs_succeeded = false;
      if (dep->result == Conclusion::failure || dep->ancestor_failed) node.ancestor_failed = true;
    }
    expr::Context context;
    context.contexts = wf.base_contexts;
    context.contexts["needs"] = needs_context(wf, node);
    context.failed = node.ancestor_failed;
    context.cancelled = g_cancel_requested || wf.cancelled;

    if (wf.cancelled || g_cancel_requested) {
      // A cancelled run starts no new job unless its condition asks for it (always()).
      bool runs = false;
      if (job.if_condition) {
        auto parsed = expr::Expression::parse(job.if_condition->value, job.if_condition->where);
        if (parsed && parsed->uses_status_function()) {
          auto decision =
              expr::evaluate_condition(job.if_condition->value, context, job.if_condition->where);
          runs = decision && *decision;
        }
      }
      if (!runs) return skip(wf, node, Conclusion::cancelled, "the run was cancelled");
    } else if (job.if_condition) {
      auto parsed = expr::Expression::parse(job.if_condition->value, job.if_condition->where);
      bool uses_status = parsed && parsed->uses_status_function();
      if (!uses_status && !needs_succeeded)
        return skip(wf, node, Conclusion::skipped, "a needed job did not succeed");
      auto decision =
          expr::evaluate_condition(job.if_condition->value, context, job.if_condition->where);
      if (!decision) return skip(wf, node, Conclusion::failure, decision.error().to_string());
      if (!*decision)
        return skip(wf, node, Conclusion::skipped,
                    fmt::format("if: {} was false", job.if_condition->value));
    } else if (!needs_succeeded) {
      return skip(wf, node, Conclusion::skipped, "a needed job did not succeed");
    }

    auto planned = plan_job(job, context, options_.matrix_filter);
    if (!planned) return skip(wf, node, Conclusion::failure, planned.error().to_string());
    if (planned->instances.empty())
      return skip(wf, node, Conclusion::skipped, "no matrix combination matches --matrix");
    node.plan = std::move(*planned);
    node.state = Node::State::planned;
    for (auto& planned_instance : node.plan.instances) {
      auto& instance = node.instances.emplace_back();
      instance.planned = planned_instance;
      instance.node = &node;
      expr::Context instance_context = context;
      instance_context.contexts["matrix"] =
          instance.planned.matrix.is_null() ? expr::Value::object()
                                            : expr::Value::parse(instance.planned.matrix.dump());
      std::string error;
      std::vector<gpu::GpuLabel> gpu_labels;
      for (const auto& label : job.runs_on.labels) {
        auto value = expr::interpolate(label.value, instance_context, label.where);
        if (value) {
          instance.labels.push_back(*value);
          gpu_labels.push_back({*value, label.where});
        } else {
          error = value.error().to_string();
        }
      }
      if (auto request = gpu::parse_gpu_request(gpu_labels))
        instance.gpu_request = *request;
      else
        error = request.error().to_string();
      if (job.concurrency) {
        auto group = expr::interpolate(job.concurrency->group.value, instance_context,
                                       job.concurrency->group.where);
        if (group)
          instance.claim.group = *group;
        else
          error = group.error().to_string();
        if (job.concurrency->cancel_in_progress) {
          auto value = evaluate_flag(*job.concurrency->cancel_in_progress, instance_context);
          if (value)
            instance.claim.cancel_in_progress = *value;
          else
            error = value.error().to_string();
        }
      }
      if (job.continue_on_error) {
        auto value = evaluate_flag(*job.continue_on_error, instance_context);
        if (value)
          instance.continue_on_error = *value;
        else
          error = value.error().to_string();
      }
      store::Job row;
      row.run_id = wf.run.id;
      row.key = instance.planned.key;
      row.workflow_job_id = job.id;
      row.name = instance.planned.name;
      row.status = store::JobStatus::queued;
      row.matrix = expr::Value::parse(instance.planned.matrix.dump());
      row.labels = instance.labels;
      auto id = store_.create_job(row);
      if (id) instance.job_row = *id;
      instance.claim.id = fmt::format("job:{}:{}", wf.run.id, instance.planned.key);
      instance_claims_[instance.claim.id] = &instance;
      if (!error.empty()) finish_instance_now(instance, Conclusion::failure, error);
    }
    maybe_finish_node(wf, node);
  }

  // Records a job that never runs (skipped, or cancelled before it started).
  // Records a job that never runs (skipped, cancelled before it started, or failed while being
  // planned) as one instance that is finished at once.
  void skip(WorkflowState& wf, Node& node, Conclusion conclusion, const std::string& reason) {
    auto& instance = node.instances.emplace_back();
    instance.node = &node;
    instance.planned.key = node.job->id;
    instance.planned.name = node.job->name ? node.job->name->value : node.job->id;
    store::Job row;
    row.run_id = wf.run.id;
    row.key = instance.planned.key;
    row.workflow_job_id = node.job->id;
    row.name = instance.planned.name;
    row.labels = nlohmann::json::array();
    if (auto id = store_.create_job(row)) instance.job_row = *id;
    node.state = Node::State::planned;
    finish_instance_now(instance, conclusion, reason);
    maybe_finish_node(wf, node);
  }

  void finish_instance_now(Instance& instance, Conclusion conclusion, const std::string& reason) {
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
    if (instance.job_row) {
      if (auto row = store_.get_job(instance.job_row)) {
        row->status = to_job_status(conclusion);
        row->conclusion = conclusion;
        row->message = reason;
        row->finished_at = store::now_ms();
        (void)store_.update_job(*row);
      }
    }
    if (conclusion == Conclusion::failure)
      observer_.job_line(instance.planned.key, "error", reason);
    observer_.job_finished(instance.summary);
  }

  // Starts queued instances while slots are free, in plan order (FIFO).
  void start_ready() {
    for (auto& wf : workflows_)
      for (auto& node : wf->nodes)
        for (auto& instance : node->instances) {
          if (instance.state != Instance::State::queued) continue;
          if (running_ >= max_parallel_) return;
          if (node->plan.max_parallel > 0 && node->running >= node->plan.max_parallel) continue;
          if (!claim(instance.claim)) continue;
          if (!place_on_gpus(instance)) continue;
          launch(*wf, *node, instance);
        }
  }

  // Grants the GPUs an instance asks for, best connected first (gpu::choose_gpus). False when
  // it must wait; an instance this host can never serve fails at once with the reason.
  bool place_on_gpus(Instance& instance) {
    if (!instance.gpu_request.wants_gpus()) return true;
    if (!inventory_) {
      gpu::DiscoverOptions discover;
      discover.simulate = options_.simulate_gpus;
      auto found = gpu::discover_inventory(discover);
      if (!found) {
        finish_instance_now(instance, Conclusion::failure, found.error().to_string());
        maybe_finish_node(*instance.node->workflow, *instance.node);
        return false;
      }
      inventory_ = std::move(*found);
    }
    auto decision = gpu::choose_gpus(*inventory_, busy_gpus_, instance.gpu_request);
    if (decision.verdict == gpu::Verdict::wait) return false;
    if (decision.verdict == gpu::Verdict::never) {
      finish_instance_now(instance, Conclusion::failure,
                          fmt::format("runs-on asks for {}: {}", instance.gpu_request.to_string(),
                                      decision.reason));
      maybe_finish_node(*instance.node->workflow, *instance.node);
      return false;
    }
    instance.gpus = decision.gpus;
    busy_gpus_.insert(decision.gpus.begin(), decision.gpus.end());
    return true;
  }

  // The environment that shows a job exactly its GPUs (DESIGN.md "GPU requests").
  std::map<std::string, std::string> gpu_environment(const Instance& instance) const {
    std::map<std::string, std::string> env;
    std::string uuids, ordinals;
    bool amd = false;
    for (size_t i = 0; i < instance.gpus.size(); ++i) {
      const auto& info = inventory_->gpus.at(static_cast<size_t>(instance.gpus[i]));
      uuids += (i ? "," : "") + info.uuid;
      ordinals += (i ? "," : "") + std::to_string(i);
      amd = amd || info.vendor == "amd";
    }
    env["KILN_GPUS"] = std::to_string(instance.gpus.size());
    env["KILN_GPU_UUIDS"] = uuids;
    if (amd) {
      env["ROCR_VISIBLE_DEVICES"] = uuids;
      env["HIP_VISIBLE_DEVICES"] = ordinals;
    } else {
      // Empty for a job that asked for no GPU: CUDA then sees none.
      env["CUDA_VISIBLE_DEVICES"] = uuids;
      env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    }
    return env;
  }

  void launch(WorkflowState& wf, Node& node, Instance& instance) {
    instance.state = Instance::State::running;
    ++running_;
    ++node.running;
    JobSetup setup;
    setup.options = &options_;
    setup.repo = &repo_;
    setup.event = &event_;
    setup.store = &store_;
    setup.observer = &observer_;
    setup.masker = &masker_;
    setup.workflow = wf.selected;
    setup.job = node.job;
    setup.run_id = wf.run.id;
    setup.run_number = wf.run.number;
    setup.job_row = instance.job_row;
    setup.instance = instance.planned;
    setup.labels = instance.labels;
    setup.contexts = wf.base_contexts;
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
    setup.workflow_env = wf.env;
    setup.gpu_env = gpu_environment(instance);
    for (int index : instance.gpus) setup.gpus.push_back(inventory_->gpus.at(static_cast<size_t>(index)));
    setup.kiln_dir = kiln_dir_;
    setup.cancel = &instance.cancel;
    observer_.job_started(instance.planned.key);
    instance.thread = std::thread([this, setup, &wf, &node, &instance] {
      JobSummary summary = run_job(setup);
      std::lock_guard lock(mutex_);
      on_instance_finished(wf, node, instance, std::move(summary));
    });
  }

  void on_instance_finished(WorkflowState& wf, Node& node, Instance& instance, JobSummary summary) {
    --running_;
    --node.running;
    instance.state = Instance::State::done;
    if (summary.conclusion == Conclusion::cancelled && !instance.cancel_reason.empty() &&
        summary.reason.empty())
      summary.reason = instance.cancel_reason;
    summary.order = ++finished_count_;
    instance.summary = std::move(summary);
    release(instance.claim);
    for (int gpu : instance.gpus) busy_gpus_.erase(gpu);
    instance.gpus.clear();
    observer_.job_finished(instance.summary);
    if (instance.summary.conclusion == Conclusion::failure && node.plan.fail_fast &&
        !instance.continue_on_error) {
      for (auto& sibling : node.instances) {
        if (&sibling == &instance) continue;
        std::string reason = fmt::format("cancelled by fail-fast: {} failed", instance.planned.key);
        if (sibling.state == Instance::State::queued) {
          finish_instance_now(sibling, Conclusion::cancelled, reason);
        } else if (sibling.state == Instance::State::running) {
          sibling.cancel_reason = reason;
          sibling.cancel.cancel();
        }
      }
    }
    maybe_finish_node(wf, node);
    changed_.notify_all();
  }

  void maybe_finish_node(WorkflowState& wf, Node& node) {
    if (node.state == Node::State::done) return;
    for (const auto& instance : node.instances)
      if (instance.state != Instance::State::done) return;
    bool any_failure = false, any_cancelled = false, all_skipped = true;
    std::vector<const Instance*> by_finish;
    for (const auto& instance : node.instances) {
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
    changed_.notify_all();
  }

  void cancel_workflow(WorkflowState& wf, const std::string& reason) {
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

  void cancel_everything(const std::string& reason) {
    for (auto& wf : workflows_) {
      wf->cancelled = true;
      cancel_workflow(*wf, reason);
    }
  }

  void report_progress() {
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
          if (instance.state == Instance::State::running) running.push_back(instance.planned.key);
        }
      }
    if (done != last_done_ || running != last_running_) {
      last_done_ = done;
      last_running_ = running;
      observer_.progress(done, total, running);
    }
  }

  WorkflowRunSummary finish_workflow(WorkflowState& wf) {
    WorkflowRunSummary summary;
    summary.run_id = wf.run.id;
    summary.workflow_path = wf.selected->path;
    summary.workflow_name = wf.selected->name;
    summary.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - wf.started);
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
    (void)store_.set_run_status(wf.run.id, status, store::now_ms());
    return summary;
  }

  const RunOptions& options_;
  const RepositoryInfo& repo_;
  const plan::Event& event_;
  store::Store& store_;
  RunObserver& observer_;
  exec::Masker masker_;
  std::filesystem::path kiln_dir_;
  int max_parallel_ = 1;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<WorkflowState>> workflows_;
  int running_ = 0;
  int finished_count_ = 0;
  plan::ConcurrencyGroups groups_;
  std::optional<gpu::Inventory> inventory_;  // discovered when a job first asks for GPUs
  std::set<int> busy_gpus_;
  std::map<std::string, Instance*> instance_claims_;
  std::map<std::string, WorkflowState*> workflow_claims_;
  int last_done_ = -1;
  std::vector<std::string> last_running_;
};

}  // namespace

void request_cancel() { g_cancel_requested = true; }

int RunReport::exit_code() const {
  for (const auto& run : runs)
    if (run.conclusion != Conclusion::success) return 1;
  return 0;
}

Result<RunReport> run(const RunOptions& options, store::Store& store, RunObserver& observer) {
  KILN_TRY(auto repo, inspect_repository(options.repository));
  KILN_TRY(auto event, make_event(options, repo));
  KILN_TRY(auto selection, select_workflows(options, repo, event));
  if (workflow::has_errors(selection.diagnostics))
    return std::unexpected(diagnostics_error(selection.diagnostics));
  for (const auto& diagnostic : selection.diagnostics) observer.warning(diagnostic.to_string());
  Scheduler scheduler(options, repo, event, store, observer);
  return scheduler.run(selection);
}

}  // namespace kiln::engine
