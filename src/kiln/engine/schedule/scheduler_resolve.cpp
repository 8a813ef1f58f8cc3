// A job whose needs are done (scheduler.h): its workflow's run, its `if`, its matrix instances with
// their labels, GPU request and concurrency, the calls of a reusable workflow, and the re-use of
// an earlier attempt's success.

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/plan/contexts.h"
#include "kiln/engine/plan/workflow_call.h"
#include "kiln/engine/schedule/scheduler.h"
#include "kiln/plan/trigger.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {

Status Scheduler::start_workflow(const SelectedWorkflow& selected,
                                 const std::string& shown_prefix) {
  auto state = std::make_unique<WorkflowState>();
  state->selected = &selected;
  state->shown_prefix = shown_prefix;
  state->started = seams_.clock.now();
  store::Run run;
  run.repository =
      options_.repository_name.empty() ? repo_.root.string() : options_.repository_name;
  run.workflow_path = selected.path.string();
  run.workflow_name = selected.name;
  run.event = event_.name;
  run.ref = event_.ref;
  run.sha = event_.sha;
  run.status = store::RunStatus::running;
  run.extra = {{"changed_files", event_.changed_files.size()}};
  if (earlier_) {
    run.attempt = earlier_->attempt + 1;
    run.rerun_of = earlier_->id;
    run.number = earlier_->number;
    run.extra["rerun"] = {{"of", earlier_->id},
                          {"failed_only", options_.rerun && options_.rerun->failed_only}};
  }
  KILN_TRY(state->run, recorder_.create_run(run));

  auto& contexts = state->base_contexts;
  contexts = expr::Value::object();
  contexts["github"] = workflow_github_context(repo_, event_, selected.name, selected.path.string(),
                                               state->run.id, state->run.number);
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
  for (const auto& [key, value] : input_values) contexts["github"]["event"]["inputs"][key] = value;
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

expr::Value Scheduler::needs_context(WorkflowState& wf, const Node& node) {
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
void Scheduler::resolve(WorkflowState& wf, Node& node) {
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
    instance_context.contexts["matrix"] = instance.planned.matrix.is_null()
                                              ? expr::Value::object()
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
    enqueue(wf, node, instance);
    store::Job row;
    row.run_id = wf.run.id;
    row.key = instance.planned.key;
    row.workflow_job_id = job.id;
    row.name = instance.planned.name;
    row.status = store::JobStatus::queued;
    row.matrix = expr::Value::parse(instance.planned.matrix.dump());
    row.labels = instance.labels;
    row.extra["graph"] = graph_of(node);
    row.queue = instance.queue.record();  // its class and since when; the wait when it leaves
    instance.job_row = recorder_.create_job(row);
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
nlohmann::json Scheduler::graph_of(const Node& node) {
  const std::string prefix = node.scope ? node.scope->key_prefix : "";
  nlohmann::json needs = nlohmann::json::array();
  for (const auto& need : node.job->needs) needs.push_back(prefix + need.value);
  return {{"node", prefix + node.job->id}, {"needs", std::move(needs)}};
}

// Re-run of failed jobs: an instance that succeeded in the earlier attempt, with nothing it
// needs run again, is recorded as succeeded with that job's outputs; the artifacts that job
// uploaded are linked into this run, so jobs that run again can download them.
void Scheduler::reuse_instance(WorkflowState& wf, Instance& instance, const store::Job& earlier) {
  instance.reused = true;
  if (earlier.outputs.is_object())
    for (const auto& [key, value] : earlier.outputs.items())
      if (value.is_string()) instance.summary.outputs[key] = value.get<std::string>();
  instance.summary.order = ++finished_count_;
  recorder_.reuse_job(instance.job_row, earlier);
  for (const auto& warning :
       recorder_.reuse_artifacts(earlier, wf.run.id, instance.job_row, artifact_root(wf.run.id)))
    observer_.job_line(shown(instance), "warning", warning);
  observer_.job_line(shown(instance), "kiln",
                     fmt::format("succeeded in run {}: not run again", earlier.run_id));
  finish_instance_now(instance, Conclusion::success,
                      fmt::format("reused from run {}", earlier.run_id));
}

std::filesystem::path Scheduler::artifact_root(std::int64_t run_id) const {
  return (options_.artifact_dir.empty() ? kiln_dir_ / "artifacts" : options_.artifact_dir) /
         std::to_string(run_id);
}

// Records a job that never runs (skipped, cancelled before it started, or failed while being
// planned) as one instance that is finished at once.
void Scheduler::skip(WorkflowState& wf, Node& node, Conclusion conclusion,
                     const std::string& reason) {
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
  instance.job_row = recorder_.create_job(row);
  node.state = Node::State::planned;
  finish_instance_now(instance, conclusion, reason);
  maybe_finish_node(wf, node);
}

// A caller job's instances: one call of the reusable workflow each, whose jobs become nodes
// of this run (keyed "caller / job") that start as their own needs allow.
void Scheduler::start_calls(WorkflowState& wf, Node& node, const expr::Context& context,
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
}

}  // namespace kiln::engine
