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

using Clock = std::chrono::steady_clock;

struct WorkflowState;
struct Node;

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
  gpu::GpuRequest gpu_request;     // from the labels; wants_gpus() false: none
  std::vector<gpu::GpuInfo> gpus;  // the GPUs leased to it while it runs
  std::string token;               // its KILN_JOB_TOKEN, set when it is placed
  SourceLocation gpu_where;        // the runs-on label that asks for GPUs, for messages
  bool said_waiting = false;       // "waiting for GPUs" is printed once
  bool reused = false;             // a re-run took it over from the earlier attempt
  JobSummary summary;
  std::thread thread;
};

// One call of a reusable workflow: an instance of a caller job (one per matrix combination)
// whose called jobs run as nodes of the caller's run, keyed "caller / job".
struct CallScope {
  Node* caller = nullptr;
  std::string key_prefix;                      // "call / ", "call (linux) / ", "outer / inner / "
  std::string name_prefix;                     // the same with display names
  const SelectedWorkflow* workflow = nullptr;  // the called file
  expr::Value base_contexts;                   // github, inputs, secrets, vars
  std::vector<std::pair<std::string, std::string>> env;  // the called workflow's env
  GroupClaim claim;                                      // the caller job's concurrency
  bool cancelled = false;  // by a newer call in the caller's concurrency group
  std::vector<Node*> nodes;
  int level = 2;  // the triggered workflow is level 1
};

struct Node {
  const workflow::Job* job = nullptr;
  WorkflowState* workflow = nullptr;
  CallScope* scope = nullptr;     // the call whose job this is; null: the triggered workflow's
  std::vector<CallScope*> calls;  // a caller job's calls, once planned
  enum class State { waiting, planned, done } state = State::waiting;
  PlannedJob plan;
  std::list<Instance> instances;  // stable addresses
  int running = 0;
  Conclusion result = Conclusion::skipped;
  bool ancestor_failed = false;  // for failure() in a job-level if
  std::map<std::string, std::string> outputs;
  // Re-run of failed jobs: every job it needs (and its call's caller) was reused, so its own
  // instances that succeeded in the earlier attempt may be reused too; `reused` once all were.
  bool inputs_reused = false;
  bool reused = false;
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
  std::vector<std::unique_ptr<CallScope>> scopes;
  std::string shown_prefix;  // "ci/" when another workflow of the run has a job of the same id
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

class Scheduler final : private ConcurrencyRegistry::Listener {
 public:
  Scheduler(const RunOptions& options, const RepositoryInfo& repo, const plan::Event& event,
            store::Store& store, RunObserver& observer)
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
  ~Scheduler() override { groups_->leave(owner_); }

  // Makes this a re-run of `earlier` (RunOptions::rerun); with failed_only, `earlier_jobs`
  // are the jobs whose successes may be reused.
  void set_rerun(store::Run earlier, const std::vector<store::Job>& earlier_jobs,
                 bool failed_only) {
    earlier_ = std::move(earlier);
    if (!failed_only) return;
    for (const auto& job : earlier_jobs)
      if (job.status == store::JobStatus::success) reusable_[job.key] = job;
  }

  Result<RunReport> run(const Selection& selection) {
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

 private:
  Status start_workflow(const SelectedWorkflow& selected, const std::string& shown_prefix) {
    auto state = std::make_unique<WorkflowState>();
    state->selected = &selected;
    state->shown_prefix = shown_prefix;
    state->started = Clock::now();
    store::Run run;
    run.repository =
        options_.repository_name.empty() ? repo_.root.string() : options_.repository_name;
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
    if (earlier_) {
      run.attempt = earlier_->attempt + 1;
      run.rerun_of = earlier_->id;
      run.number = earlier_->number;
      run.extra["rerun"] = {{"of", earlier_->id},
                            {"failed_only", options_.rerun && options_.rerun->failed_only}};
    }
    KILN_TRY(state->run, store_.create_run(run));

    auto& contexts = state->base_contexts;
    contexts = expr::Value::object();
    contexts["github"] = workflow_github_context(
        repo_, event_, selected.name, selected.path.string(), state->run.id, state->run.number);
    contexts["github"]["run_attempt"] = std::to_string(state->run.attempt);
    if (!options_.actor.empty())
      contexts["github"]["actor"] = contexts["github"]["triggering_actor"] = options_.actor;
    // Dispatch inputs with the workflow's defaults and types applied.
    std::map<std::string, std::string> input_values = event_.inputs;
    if (const auto* trigger = selected.workflow.find_trigger("workflow_dispatch");
        trigger && event_.name == "workflow_dispatch") {
      expr::Context github;
      github.contexts["github"] = contexts["github"];
      KILN_TRY(input_values, plan::resolve_dispatch_inputs(*trigger, event_.inputs, github));
    }
    for (const auto& [key, value] : input_values)
      contexts["github"]["event"]["inputs"][key] = value;
    contexts["inputs"] = typed_inputs(selected.workflow, input_values);
    contexts["vars"] = expr::Value::object();
    for (const auto& [key, value] : options_.vars) contexts["vars"][key] = value;
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
    KILN_TRY(auto workflow_env, workflow::expand_mapping(selected.workflow.env, context, "env"));
    for (const auto& [key, text] : workflow_env) {
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

  // A job of the same workflow file (and the same call of it) as `from`.
  Node* find_node(WorkflowState& wf, const std::string& id, const Node& from) {
    for (auto& node : wf.nodes)
      if (node->scope == from.scope && node->job->id == id) return node.get();
    return nullptr;
  }

  // Everything (request_cancel) or only this run (RunOptions::cancel) is to be cancelled.
  bool cancel_requested() const {
    return g_cancel_requested || (options_.cancel && options_.cancel->load());
  }

  // Runs until every node is done.
  void loop() {
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

  bool all_done() const {
    for (const auto& wf : workflows_)
      for (const auto& node : wf->nodes)
        if (node->state != Node::State::done) return false;
    return true;
  }

  bool needs_done(WorkflowState& wf, const Node& node) {
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

  // Workflow-level concurrency: a workflow starts no job until it holds its group.
  void acquire_workflow_groups() {
    for (auto& wf : workflows_) {
      if (wf->cancelled) continue;
      claim(wf->claim);
      for (auto& scope : wf->scopes) claim(scope->claim);
    }
  }

  // Asks for a claim's group once; cancels what the answer says. True when the claim holds.
  bool claim(GroupClaim& claim) {
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

  void release(GroupClaim& claim) {
    if (!claim.requested) return;
    claim.requested = false;
    claim.granted = false;
    auto promoted = groups_->release(owner_, claim.group, claim.id);
    if (promoted) grant(*promoted);
  }

  // A claim of this scheduler holds its group now.
  void grant(const std::string& id) {
    if (auto it = instance_claims_.find(id); it != instance_claims_.end())
      it->second->claim.granted = true;
    if (auto it = workflow_claims_.find(id); it != workflow_claims_.end())
      it->second->claim.granted = true;
    if (auto it = scope_claims_.find(id); it != scope_claims_.end())
      it->second->claim.granted = true;
    changed_.notify_all();
  }

  // ConcurrencyRegistry::Listener: another engine call of this process (another trigger of
  // `kiln serve`) released a group this scheduler waits for, or replaced or cancels one of its
  // claims. Queued here and applied by the loop under mutex_ (take_remote_decisions).
  void granted(const std::string& id) override {
    {
      std::lock_guard lock(remote_mutex_);
      remote_.push_back({id, ""});
    }
    changed_.notify_all();
  }
  void cancelled(const std::string& id, const std::string& group) override {
    {
      std::lock_guard lock(remote_mutex_);
      remote_.push_back({id, group});
    }
    changed_.notify_all();
  }
  void take_remote_decisions() {
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
    if (auto it = scope_claims_.find(id); it != scope_claims_.end())
      cancel_scope(*it->second, reason);
  }

  // True when the call a node belongs to, or one around it, was cancelled.
  static bool in_cancelled_call(const CallScope* scope) {
    for (; scope; scope = scope->caller->scope)
      if (scope->cancelled) return true;
    return false;
  }

  // Cancels one call of a reusable workflow: its jobs (and those of the calls inside it) that
  // are queued or running; the ones still waiting are cancelled when their needs are done.
  void cancel_scope(CallScope& scope, const std::string& reason) {
    scope.cancelled = true;
    WorkflowState& wf = *scope.caller->workflow;
    std::vector<Node*> affected;
    for (auto& node : wf.nodes) {
      bool inside = false;
      for (const CallScope* s = node->scope; s && !inside; s = s->caller->scope)
        inside = s == &scope;
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

  bool workflow_done(const WorkflowState& wf) const {
    return std::all_of(wf.nodes.begin(), wf.nodes.end(),
                       [](const auto& node) { return node->state == Node::State::done; });
  }

  expr::Value needs_context(WorkflowState& wf, const Node& node) {
    expr::Value needs = expr::Value::object();
    for (const auto& need : node.job->needs) {
      Node* dep = find_node(wf, need.value, node);
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
    node.inputs_reused = !reusable_.empty() && (!node.scope || node.scope->caller->inputs_reused);
    for (const auto& need : job.needs) {
      Node* dep = find_node(wf, need.value, node);
      if (!dep) continue;
      if (!dep->reused) node.inputs_reused = false;
      if (dep->result != Conclusion::success) needs_succeeded = false;
      if (dep->result == Conclusion::failure || dep->ancestor_failed) node.ancestor_failed = true;
    }
    expr::Context context;
    context.contexts = node.scope ? node.scope->base_contexts : wf.base_contexts;
    context.contexts["needs"] = needs_context(wf, node);
    context.failed = node.ancestor_failed;
    bool call_cancelled = in_cancelled_call(node.scope);
    context.cancelled = cancel_requested() || wf.cancelled || call_cancelled;

    if (wf.cancelled || cancel_requested() || call_cancelled) {
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

    // --matrix filters the triggered workflow's jobs, not the ones it calls.
    auto planned = plan_job(
        job, context,
        node.scope ? std::vector<std::pair<std::string, std::string>>{} : options_.matrix_filter);
    if (!planned) return skip(wf, node, Conclusion::failure, planned.error().to_string());
    if (planned->instances.empty())
      return skip(wf, node, Conclusion::skipped, "no matrix combination matches --matrix");
    std::string key_prefix = node.scope ? node.scope->key_prefix : "";
    std::string name_prefix = node.scope ? node.scope->name_prefix : "";
    for (auto& instance : planned->instances) {
      instance.key = key_prefix + instance.key;
      instance.name = name_prefix + instance.name;
    }
    if (job.calls_workflow()) return start_calls(wf, node, context, std::move(*planned));
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
      if (auto labels = instance_labels(job.runs_on, instance_context)) {
        gpu_labels = std::move(*labels);
        for (const auto& label : gpu_labels) instance.labels.push_back(label.value);
        if (auto served = check_served_labels(gpu_labels, options_.gpu_labels); !served)
          error = served.error().to_string();
      } else {
        error = labels.error().to_string();
      }
      gpu_labels = options_.gpu_labels.expand(gpu_labels);
      std::optional<std::string> container_options;
      // A container written as an expression asks for GPUs with the options it yields.
      std::optional<workflow::Container> container = job.container;
      if (container && container->expression) {
        if (auto resolved = workflow::resolve_containers(job, instance_context))
          container = (*resolved)->container;
        else
          error = resolved.error().to_string();
      }
      SourceLocation options_where;
      if (container && container->options) {
        const auto& text = *container->options;
        options_where = text.where;
        if (auto value = expr::interpolate(text.value, instance_context, text.where))
          container_options = *value;
        else
          error = value.error().to_string();
      }
      instance.gpu_where = gpu_request_where(gpu_labels, job.runs_on.where, options_where);
      if (auto request = job_gpu_request(gpu_labels, container_options))
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
      row.extra["graph"] = graph_of(node);
      auto id = store_.create_job(row);
      if (id) instance.job_row = *id;
      instance.claim.id = fmt::format("job:{}:{}", wf.run.id, instance.planned.key);
      instance_claims_[instance.claim.id] = &instance;
      if (!error.empty()) {
        finish_instance_now(instance, Conclusion::failure, error);
      } else if (node.inputs_reused) {
        if (auto earlier = reusable_.find(instance.planned.key); earlier != reusable_.end())
          reuse_instance(wf, instance, earlier->second);
      }
    }
    maybe_finish_node(wf, node);
  }

  // The job's place in the needs graph, kept in the job row for the dashboard's job graph
  // (GET /api/runs/ID: "node" and "needs"): its node "prefix + id" and the nodes it needs, in
  // the same scope (a reusable workflow's jobs need jobs of the same call).
  static nlohmann::json graph_of(const Node& node) {
    const std::string prefix = node.scope ? node.scope->key_prefix : "";
    nlohmann::json needs = nlohmann::json::array();
    for (const auto& need : node.job->needs) needs.push_back(prefix + need.value);
    return {{"node", prefix + node.job->id}, {"needs", std::move(needs)}};
  }

  // Re-run of failed jobs: an instance that succeeded in the earlier attempt, with nothing it
  // needs run again, is recorded as succeeded with that job's outputs; the artifacts that job
  // uploaded are linked into this run, so jobs that run again can download them.
  void reuse_instance(WorkflowState& wf, Instance& instance, const store::Job& earlier) {
    instance.reused = true;
    if (earlier.outputs.is_object())
      for (const auto& [key, value] : earlier.outputs.items())
        if (value.is_string()) instance.summary.outputs[key] = value.get<std::string>();
    instance.summary.order = ++finished_count_;
    if (auto row = store_.get_job(instance.job_row)) {
      row->outputs = earlier.outputs;
      row->started_at = store::now_ms();
      row->extra = {{"reused_from", {{"run", earlier.run_id}, {"job", earlier.id}}}};
      (void)store_.update_job(*row);
    }
    if (auto artifacts = store_.list_artifacts(earlier.run_id)) {
      for (auto artifact : *artifacts) {
        if (artifact.job_id != earlier.id) continue;
        const auto target = artifact_root(wf.run.id) / artifact.name;
        std::error_code ec;
        std::filesystem::create_directories(target.parent_path(), ec);
        std::filesystem::copy(artifact.path, target,
                              std::filesystem::copy_options::recursive |
                                  std::filesystem::copy_options::create_hard_links,
                              ec);
        if (ec) {
          ec.clear();
          std::filesystem::copy(artifact.path, target, std::filesystem::copy_options::recursive,
                                ec);
        }
        if (ec) {
          observer_.job_line(
              shown(instance), "warning",
              fmt::format("cannot reuse artifact {}: {}", artifact.name, ec.message()));
          continue;
        }
        artifact.run_id = wf.run.id;
        artifact.job_id = instance.job_row;
        artifact.path = target.string();
        artifact.created_at = 0;
        artifact.expires_at = 0;
        (void)store_.create_artifact(artifact);
      }
    }
    observer_.job_line(shown(instance), "kiln",
                       fmt::format("succeeded in run {}: not run again", earlier.run_id));
    finish_instance_now(instance, Conclusion::success,
                        fmt::format("reused from run {}", earlier.run_id));
  }

  std::filesystem::path artifact_root(std::int64_t run_id) const {
    return (options_.artifact_dir.empty() ? kiln_dir_ / "artifacts" : options_.artifact_dir) /
           std::to_string(run_id);
  }

  // Records a job that never runs (skipped, cancelled before it started, or failed while being
  // planned) as one instance that is finished at once.
  void skip(WorkflowState& wf, Node& node, Conclusion conclusion, const std::string& reason) {
    auto& instance = node.instances.emplace_back();
    instance.node = &node;
    instance.planned.key = (node.scope ? node.scope->key_prefix : "") + node.job->id;
    instance.planned.name = (node.scope ? node.scope->name_prefix : "") +
                            (node.job->name ? node.job->name->value : node.job->id);
    store::Job row;
    row.run_id = wf.run.id;
    row.key = instance.planned.key;
    row.workflow_job_id = node.job->id;
    row.name = instance.planned.name;
    row.labels = nlohmann::json::array();
    row.extra["graph"] = graph_of(node);
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
    if (conclusion == Conclusion::failure) observer_.job_line(shown(instance), "error", reason);
    finished_to_observer(instance);
  }

  // Starts queued instances while slots are free, in plan order (FIFO). GPU jobs go through
  // one gpu::QueuePass: the first that must wait reserves its GPUs, later ones backfill around
  // them.
  void start_ready() {
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
  static std::string shown(const Instance& instance) {
    return instance.node->workflow->shown_prefix + instance.planned.key;
  }
  void finished_to_observer(const Instance& instance) {
    if (instance.node->workflow->shown_prefix.empty())
      return observer_.job_finished(instance.summary);
    JobSummary shown_summary = instance.summary;
    shown_summary.key = shown(instance);
    observer_.job_finished(shown_summary);
  }

  std::string job_token(const Instance& instance) const {
    return fmt::format(
        "{}-{}",
        options_.job_token_prefix.empty() ? exec::new_job_token() : options_.job_token_prefix,
        instance.job_row);
  }

  // Leases the GPUs an instance asks for, best connected first. False when it must wait; an
  // instance this host can never serve fails at once with the reason.
  bool place_on_gpus(Instance& instance, std::optional<gpu::QueuePass>& pass) {
    if (instance.token.empty()) instance.token = job_token(instance);
    if (!instance.gpu_request.wants_gpus()) return true;
    auto fail_instance = [&](const std::string& reason) {
      finish_instance_now(instance, Conclusion::failure, reason);
      maybe_finish_node(*instance.node->workflow, *instance.node);
      return false;
    };
    if (!pass) {
      std::vector<std::string> notes;
      auto snapshot = gpus_.snapshot(notes);
      for (const auto& note : notes) observer_.warning(note);
      if (!snapshot) return fail_instance(snapshot.error().to_string());
      // The GPUs and links never change within a run: one Topology over pass_inventory_, whose
      // live state (memory, processes) each pass refreshes in place.
      pass_inventory_ = std::move(snapshot->inventory);
      if (!topology_) topology_ = std::make_unique<gpu::Topology>(pass_inventory_);
      pass.emplace(*topology_, std::move(snapshot->unavailable));
    }
    auto decision = pass->place(instance.gpu_request);
    if (decision.verdict == gpu::Verdict::wait) {
      if (!instance.said_waiting) {
        instance.said_waiting = true;
        observer_.job_line(shown(instance), "kiln", "waiting for GPUs: " + decision.reason);
      }
      return false;
    }
    if (decision.verdict == gpu::Verdict::never)
      return fail_instance(fmt::format("{}: runs-on asks for {}: {}",
                                       instance.gpu_where.to_string(),
                                       instance.gpu_request.to_string(), decision.reason));
    const auto& wf = *instance.node->workflow;
    store::GpuLease lease;
    lease.holder = masker_.mask(fmt::format("{}: {} / {} (run {})", repo_.root.filename().string(),
                                            wf.selected->name, instance.planned.key, wf.run.id));
    lease.job_token = instance.token;
    lease.run_id = wf.run.id;
    auto leased = gpus_.lease(decision.gpus, lease);
    if (!leased) return fail_instance(leased.error().to_string());
    if (!*leased) {  // another kiln process took one of them meanwhile
      if (!instance.said_waiting) {
        instance.said_waiting = true;
        observer_.job_line(shown(instance), "kiln",
                           "waiting for GPUs: another kiln process holds them");
      }
      return false;
    }
    instance.gpus.clear();
    for (int index : decision.gpus)
      instance.gpus.push_back(pass_inventory_.gpus.at(static_cast<std::size_t>(index)));
    return true;
  }

  // The environment that shows a job exactly its GPUs (DESIGN.md "GPU requests").
  std::map<std::string, std::string> gpu_environment(const Instance& instance) const {
    std::map<std::string, std::string> env;
    std::string uuids, ordinals;
    bool amd = false;
    for (size_t i = 0; i < instance.gpus.size(); ++i) {
      const auto& info = instance.gpus[i];
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
    instance.gpus.clear();
    finished_to_observer(instance);
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
    // fail-fast of a matrix of calls: a failed called job cancels the caller's other calls.
    if (instance.summary.conclusion == Conclusion::failure && !instance.continue_on_error)
      for (CallScope* scope = node.scope; scope; scope = scope->caller->scope) {
        Node& caller = *scope->caller;
        if (!caller.plan.fail_fast || caller.calls.size() < 2) continue;
        for (CallScope* other : caller.calls)
          if (other != scope && !other->cancelled)
            cancel_scope(*other,
                         fmt::format("cancelled by fail-fast: {} failed", instance.planned.key));
      }
    maybe_finish_node(wf, node);
    changed_.notify_all();
  }

  void maybe_finish_node(WorkflowState& wf, Node& node) {
    if (node.state == Node::State::done) return;
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
    changed_.notify_all();
  }

  // A caller job's instances: one call of the reusable workflow each, whose jobs become nodes
  // of this run (keyed "caller / job") that start as their own needs allow.
  void start_calls(WorkflowState& wf, Node& node, const expr::Context& context,
                   PlannedJob planned) {
    const auto& job = *node.job;
    auto found = called_.find(job.uses->value);
    const SelectedWorkflow* called = found == called_.end() ? nullptr : found->second.get();
    if (auto why = unresolved_.find(job.uses->value); why != unresolved_.end())
      return skip(wf, node, Conclusion::failure, why->second);
    if (!called || !called->workflow.find_trigger("workflow_call"))
      return skip(wf, node, Conclusion::failure,
                  fmt::format("{}: '{}' is not a reusable workflow", job.uses->where.to_string(),
                              job.uses->value));
    int level = node.scope ? node.scope->level + 1 : 2;
    if (level > workflow::k_max_workflow_levels)
      return skip(wf, node, Conclusion::failure,
                  fmt::format("{}: reusable workflows nest deeper than {} levels",
                              job.uses->where.to_string(), workflow::k_max_workflow_levels));
    std::vector<std::unique_ptr<CallScope>> scopes;
    for (const auto& instance : planned.instances) {
      expr::Context instance_context = context;
      instance_context.contexts["matrix"] = instance.matrix.is_null()
                                                ? expr::Value::object()
                                                : expr::Value::parse(instance.matrix.dump());
      auto prepared = prepare_call(job, called->workflow, instance_context, options_.extra_env);
      if (!prepared) return skip(wf, node, Conclusion::failure, prepared.error().to_string());
      auto scope = std::make_unique<CallScope>();
      scope->caller = &node;
      scope->key_prefix = instance.key + " / ";
      scope->name_prefix = instance.name + " / ";
      scope->workflow = called;
      scope->level = level;
      scope->base_contexts = std::move(prepared->contexts);
      scope->env = std::move(prepared->env);
      scope->claim.group = prepared->concurrency_group;
      scope->claim.cancel_in_progress = prepared->cancel_in_progress;
      scope->claim.id = fmt::format("call:{}:{}", wf.run.id, instance.key);
      scopes.push_back(std::move(scope));
    }
    node.plan = std::move(planned);
    node.state = Node::State::planned;
    for (auto& scope : scopes) {
      for (const auto& called_job : called->workflow.jobs) {
        auto child = std::make_unique<Node>();
        child->job = &called_job;
        child->workflow = &wf;
        child->scope = scope.get();
        scope->nodes.push_back(child.get());
        wf.nodes.push_back(std::move(child));
      }
      node.calls.push_back(scope.get());
      scope_claims_[scope->claim.id] = scope.get();
      wf.scopes.push_back(std::move(scope));
    }
    changed_.notify_all();
  }

  // A caller job is done when every job of each of its calls is: it failed when one of them
  // failed, and its outputs are the called workflow's (the last call to set one wins).
  void maybe_finish_caller(WorkflowState& wf, Node& node) {
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
          if (instance.state == Instance::State::running) running.push_back(shown(instance));
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
  exec::Masker masker_;
  // The run's one masking point (masking.h): every write and report of the run goes through it.
  MaskingStore store_;
  MaskingObserver observer_;
  std::filesystem::path kiln_dir_;
  int max_parallel_ = 1;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<WorkflowState>> workflows_;
  int running_ = 0;
  int finished_count_ = 0;
  std::shared_ptr<ConcurrencyRegistry> groups_;
  int owner_ = 0;
  std::mutex remote_mutex_;  // guards remote_ only; never held while calling groups_
  std::vector<std::pair<std::string, std::string>> remote_;  // (id, "" granted / group cancelled)
  GpuSupervisor gpus_;  // inventory, leases and health, from the first job that asks for GPUs
  gpu::Inventory pass_inventory_;            // the latest snapshot's GPUs
  std::unique_ptr<gpu::Topology> topology_;  // over pass_inventory_
  std::map<std::string, Instance*> instance_claims_;
  std::map<std::string, WorkflowState*> workflow_claims_;
  std::map<std::string, CallScope*> scope_claims_;
  std::map<std::string, std::unique_ptr<SelectedWorkflow>> called_;  // by `uses:` text
  std::map<std::string, std::string> unresolved_;                    // Selection::unresolved
  int last_done_ = -1;
  std::vector<std::string> last_running_;
  std::optional<store::Run> earlier_;           // the run this one repeats (a re-run)
  std::map<std::string, store::Job> reusable_;  // its succeeded jobs, by key (failed_only)
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
