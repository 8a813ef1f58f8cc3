#include "kiln/engine/plan/planner.h"

#include "kiln/gpu/allocator.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/container/check.h"
#include "kiln/container/gpu_flags.h"
#include "kiln/engine/plan/workflow_call.h"
#include "kiln/exec/actions.h"
#include "kiln/gpu/request.h"
#include "kiln/plan/matrix.h"
#include "kiln/plan/trigger.h"
#include "kiln/workflow/loader.h"

namespace kiln::engine {
namespace {

// Evaluates every `${{ }}` string inside a matrix definition, keeping other values as written.
Result<nlohmann::ordered_json> evaluate_matrix_values(const nlohmann::ordered_json& value,
                                                      const expr::Context& context,
                                                      const SourceLocation& where) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (!expr::has_template(text)) return value;
    KILN_TRY(auto result, expr::evaluate_template(text, context, where));
    return nlohmann::ordered_json::parse(result.dump());
  }
  if (value.is_array()) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& item : value) {
      KILN_TRY(auto evaluated, evaluate_matrix_values(item, context, where));
      out.push_back(std::move(evaluated));
    }
    return out;
  }
  if (value.is_object()) {
    auto out = nlohmann::ordered_json::object();
    for (const auto& [key, item] : value.items()) {
      KILN_TRY(auto evaluated, evaluate_matrix_values(item, context, where));
      out[key] = std::move(evaluated);
    }
    return out;
  }
  return value;
}

bool text_refers_to_needs(const std::string& text) {
  return expr::has_template(text) && text.find("needs.") != std::string::npos;
}

std::string scalar_text(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// The keys a job's matrix can have, as written; nullopt when an expression decides them (a
// matrix or an include list that is one `${{ }}`).
std::optional<std::set<std::string>> matrix_keys(const workflow::Job& job) {
  std::set<std::string> keys;
  if (!job.strategy || !job.strategy->matrix) return keys;
  const auto& matrix = *job.strategy->matrix;
  if (!matrix.is_object()) return std::nullopt;
  for (const auto& [key, value] : matrix.items()) {
    if (key == "exclude") continue;
    if (key != "include") {
      keys.insert(key);
      continue;
    }
    if (!value.is_array()) return std::nullopt;
    for (const auto& entry : value) {
      if (!entry.is_object()) return std::nullopt;
      for (const auto& [include_key, ignored] : entry.items()) keys.insert(include_key);
    }
  }
  return keys;
}

// --matrix K=V names a key of the matrix of at least one job that runs (unless an expression
// decides some job's keys: then it cannot be known before the run).
Status check_matrix_filter(const Selection& selection, const RunOptions& options) {
  if (options.matrix_filter.empty()) return {};
  std::set<std::string> known;
  for (const auto& selected : selection.triggered) {
    KILN_TRY(auto ids, jobs_to_run(selected.workflow, options.job_filter));
    for (const auto& id : ids) {
      auto keys = matrix_keys(*selected.workflow.find_job(id));
      if (!keys) return {};
      known.insert(keys->begin(), keys->end());
    }
  }
  for (const auto& [key, value] : options.matrix_filter)
    if (!known.contains(key))
      return make_error(
          ErrorCode::invalid_input,
          known.empty() ? fmt::format("--matrix {}={}: no job that runs has a matrix", key, value)
                        : fmt::format("--matrix {}={}: no job that runs has the matrix key '{}' "
                                      "(keys: {})",
                                      key, value, key, fmt::join(known, ", ")));
  return {};
}

}  // namespace

Result<bool> evaluate_flag(const workflow::Text& text, const expr::Context& context) {
  KILN_TRY(auto value, expr::evaluate_template(text.value, context, text.where));
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return expr::truthy(value);
}

expr::Value typed_inputs(const workflow::Workflow& workflow,
                         const std::map<std::string, std::string>& values) {
  expr::Value inputs = expr::Value::object();
  const auto* trigger = workflow.find_trigger("workflow_dispatch");
  for (const auto& [key, value] : values) {
    inputs[key] = value;
    if (!trigger) continue;
    for (const auto& spec : trigger->inputs) {
      if (spec.name != key) continue;
      if (spec.type == "boolean") inputs[key] = value == "true";
      if (spec.type == "number") {
        char* end = nullptr;
        double number = std::strtod(value.c_str(), &end);
        if (end != value.c_str() && *end == '\0') inputs[key] = number;
      }
    }
  }
  return inputs;
}

bool plan_needs_results(const workflow::Job& job) {
  if (job.strategy && job.strategy->matrix && text_refers_to_needs(job.strategy->matrix->dump()))
    return true;
  return job.name && text_refers_to_needs(job.name->value);
}

Result<PlannedJob> plan_job(const workflow::Job& job, const expr::Context& context,
                            const std::vector<std::pair<std::string, std::string>>& matrix_filter) {
  PlannedJob planned;
  std::vector<nlohmann::ordered_json> combinations;
  if (job.strategy) {
    const auto& strategy = *job.strategy;
    if (strategy.fail_fast) {
      KILN_TRY(planned.fail_fast, evaluate_flag(*strategy.fail_fast, context));
    }
    if (strategy.max_parallel) {
      KILN_TRY(auto value, expr::evaluate_template(strategy.max_parallel->value, context,
                                                   strategy.max_parallel->where));
      std::string text = expr::to_text(value);
      char* end = nullptr;
      long n = std::strtol(text.c_str(), &end, 10);
      if (end == text.c_str() || *end != '\0' || n < 1)
        return fail_at(strategy.max_parallel->where,
                       "strategy.max-parallel must be a positive number, got '{}'", text);
      planned.max_parallel = static_cast<int>(n);
    }
    if (strategy.matrix) {
      KILN_TRY(auto matrix,
               evaluate_matrix_values(*strategy.matrix, context, strategy.matrix_where));
      if (!matrix.is_object())
        return fail_at(strategy.matrix_where, "strategy.matrix must evaluate to an object, got {}",
                       matrix.dump());
      auto expanded = plan::expand_matrix(matrix);
      if (!expanded) {
        auto error = expanded.error();
        if (error.where.empty()) error.where = strategy.matrix_where;
        return std::unexpected(error);
      }
      combinations = std::move(*expanded);
    }
  }
  if (combinations.empty()) combinations.emplace_back(nullptr);

  // --matrix K=V keeps the combinations whose K is V, for the keys this job's matrix has: a job
  // without K in its matrix (or without a matrix) is not filtered by it.
  std::set<std::string> keys;
  for (const auto& combination : combinations)
    if (combination.is_object())
      for (const auto& [key, value] : combination.items()) keys.insert(key);
  std::vector<nlohmann::ordered_json> kept;
  for (auto& combination : combinations) {
    bool keep = std::all_of(matrix_filter.begin(), matrix_filter.end(), [&](const auto& filter) {
      if (!keys.contains(filter.first)) return true;
      return combination.is_object() && combination.contains(filter.first) &&
             scalar_text(combination[filter.first]) == filter.second;
    });
    if (keep) kept.push_back(std::move(combination));
  }

  // Duplicate combinations are separate jobs, as on GitHub: the display name repeats, the key
  // (GitHub's job reference name) gets "_2", "_3"... so each has its own directory and row.
  std::set<std::string> used_keys;
  int total = static_cast<int>(kept.size());
  for (int i = 0; i < total; ++i) {
    PlannedInstance instance;
    instance.matrix = std::move(kept[i]);
    instance.index = i;
    instance.total = total;
    std::string suffix = instance.matrix.is_object() && !instance.matrix.empty()
                             ? fmt::format(" ({})", plan::matrix_values_text(instance.matrix))
                             : std::string{};
    instance.key = job.id + suffix;
    for (int attempt = 2; !used_keys.insert(instance.key).second; ++attempt)
      instance.key = fmt::format("{}{}_{}", job.id, suffix, attempt);
    if (job.name) {
      expr::Context named = context;
      named.contexts["matrix"] = nlohmann::json::parse(instance.matrix.dump());
      KILN_TRY(auto name, expr::interpolate(job.name->value, named, job.name->where));
      instance.name = expr::has_template(job.name->value) ? name : name + suffix;
    } else {
      instance.name = job.id + suffix;
    }
    planned.instances.push_back(std::move(instance));
  }
  return planned;
}

Result<std::vector<std::string>> jobs_to_run(const workflow::Workflow& workflow,
                                             const std::vector<std::string>& filter) {
  std::vector<std::string> all;
  for (const auto& job : workflow.jobs) all.push_back(job.id);
  if (filter.empty()) return all;
  std::set<std::string> wanted;
  std::vector<std::string> pending;
  for (const auto& id : filter)
    if (workflow.find_job(id)) pending.push_back(id);
  while (!pending.empty()) {
    std::string id = pending.back();
    pending.pop_back();
    if (!wanted.insert(id).second) continue;
    for (const auto& need : workflow.find_job(id)->needs) pending.push_back(need.value);
  }
  std::vector<std::string> ordered;
  for (const auto& id : all)
    if (wanted.contains(id)) ordered.push_back(id);
  return ordered;
}

workflow::ReferenceRoots reference_roots(const RunOptions& options, const RepositoryInfo& repo) {
  workflow::ReferenceRoots roots;
  roots.repository = repo.root;
  roots.mirror = options.actions_mirror;
  roots.fetch = options.actions_fetcher;
  roots.is_builtin_action = [](std::string_view uses) { return exec::is_builtin_action(uses); };
  return roots;
}

Result<Selection> select_workflows(const RunOptions& options, const RepositoryInfo& repo,
                                   const plan::Event& event) {
  Selection selection;
  // -W is relative to -C, as paths after `git -C` and `make -C` are.
  std::filesystem::path where = options.workflows ? *options.workflows : repo.root;
  if (options.workflows && where.is_relative())
    where = std::filesystem::absolute(options.repository / where);
  KILN_TRY(auto files, workflow::discover_workflows(where));
  if (files.empty())
    return make_error(ErrorCode::invalid_input,
                      fmt::format("no workflow files found in {} (expected "
                                  ".github/workflows/*.yml or *.yaml)",
                                  where.string()));
  std::set<std::string> jobs_found;
  for (const auto& file : files) {
    std::error_code ec;
    auto display = std::filesystem::relative(file, repo.root, ec);
    if (ec || display.empty() || display.string().starts_with("..")) display = file;
    auto loaded = workflow::load_workflow_file(file, display);
    selection.diagnostics.insert(selection.diagnostics.end(), loaded.diagnostics.begin(),
                                 loaded.diagnostics.end());
    if (!loaded.workflow) continue;
    auto gpu_errors = check_job_settings(*loaded.workflow, options.gpu_labels, nullptr,
                                         options.slurm ? &*options.slurm : nullptr);
    auto container_errors = container::check_containers(*loaded.workflow, options.container_policy);
    gpu_errors.insert(gpu_errors.end(), container_errors.begin(), container_errors.end());
    selection.diagnostics.insert(selection.diagnostics.end(), gpu_errors.begin(), gpu_errors.end());
    if (workflow::has_errors(gpu_errors)) continue;  // warnings (check.h) do not stop it
    // Calls of reusable workflows and local actions: followed and checked before anything runs.
    auto checked =
        workflow::check_references(*loaded.workflow, file, reference_roots(options, repo));
    selection.diagnostics.insert(selection.diagnostics.end(), checked.diagnostics.begin(),
                                 checked.diagnostics.end());
    if (workflow::has_errors(checked.diagnostics)) continue;
    selection.called.merge(checked.workflows);
    selection.unresolved.merge(checked.unresolved);
    for (const auto& job : loaded.workflow->jobs) jobs_found.insert(job.id);
    auto decision = plan::match_trigger(*loaded.workflow, event);
    if (!decision.runs) {
      selection.not_triggered.emplace_back(display.string(), decision.reason);
      continue;
    }
    SelectedWorkflow selected;
    selected.path = display;
    selected.name = loaded.workflow->name ? loaded.workflow->name->value : display.string();
    selected.workflow = std::move(*loaded.workflow);
    selection.triggered.push_back(std::move(selected));
  }
  for (const auto& id : options.job_filter)
    if (!jobs_found.contains(id) && !workflow::has_errors(selection.diagnostics))
      return make_error(ErrorCode::invalid_input,
                        fmt::format("--job {}: no workflow has a job with this id", id));
  if (!workflow::has_errors(selection.diagnostics))
    KILN_TRY_VOID(check_matrix_filter(selection, options));
  return selection;
}

}  // namespace kiln::engine

namespace kiln::engine {

Error diagnostics_error(const workflow::Diagnostics& diagnostics) {
  Error error{ErrorCode::invalid_input, "", {}};
  bool first = true;
  for (const auto& diagnostic : diagnostics) {
    if (diagnostic.severity != workflow::Severity::error) continue;
    if (first) {
      error.where = diagnostic.where;
      error.message = diagnostic.message;
      first = false;
    } else {
      error.message += "\n" + diagnostic.to_string();
    }
  }
  return error;
}

namespace {

using Filter = std::vector<std::pair<std::string, std::string>>;

// One job of the plan (--dry-run --json; the schema is in docs/cli.md).
// Gives `scratch` the `key` context of `base` again (or none, when base has none).
void restore_context(expr::Context& scratch, const expr::Context& base, const char* key) {
  if (auto found = base.contexts.find(key); found != base.contexts.end())
    scratch.contexts[key] = *found;
  else
    scratch.contexts.erase(key);
}

// `scratch` is a copy of `context` that the caller keeps for all its jobs: each job sets its
// `needs` and `matrix` there and puts them back, instead of copying the whole event per job and
// per instance (14% of the dry-run's instructions with 20,000 jobs).
Result<nlohmann::ordered_json> plan_entry(const workflow::Job& job, const expr::Context& context,
                                          expr::Context& scratch, const std::string& prefix,
                                          const Filter& matrix_filter,
                                          const gpu::GpuLabelMap& host) {
  using json = nlohmann::ordered_json;
  json needs = json::array();
  for (const auto& need : job.needs) needs.push_back(prefix + need.value);
  json entry = {{"id", prefix + job.id},
                {"name", job.name ? job.name->value : job.id},
                {"needs", needs},
                {"if", job.if_condition ? json(job.if_condition->value) : json(nullptr)},
                {"runs_on", json::array()},
                {"container", job.container ? json(job.container->image.value) : json(nullptr)},
                {"services", json::array()},
                {"steps", json::array()}};
  for (const auto& label : job.runs_on.labels) entry["runs_on"].push_back(label.value);
  // A called workflow's image is often an input: shown as it will run.
  // `container:` or `services:` written as one expression: shown as written (matrix values
  // and needs outputs decide them per instance when the job runs).
  if (job.container && job.container->expression)
    entry["container"] = job.container->expression->value;
  else if (job.container)
    if (auto image =
            expr::interpolate(job.container->image.value, context, job.container->image.where))
      entry["container"] = *image;
  for (const auto& [name, service] : job.services)
    entry["services"].push_back(
        {{"name", name},
         {"image", service.expression ? service.expression->value : service.image.value}});
  if (job.services_expression)
    entry["services"].push_back({{"name", nullptr}, {"image", job.services_expression->value}});
  if (job.snapshot)
    entry["snapshot"] = {
        {"image-name", job.snapshot->image_name.value},
        {"version", job.snapshot->version ? json(job.snapshot->version->value) : json(nullptr)},
        {"if",
         job.snapshot->if_condition ? json(job.snapshot->if_condition->value) : json(nullptr)}};
  for (const auto& step : job.steps) {
    entry["steps"].push_back(step.name ? step.name->value : step.default_name());
  }
  if (plan_needs_results(job)) {
    entry["matrix_deferred"] = true;
    entry["instances"] = json::array();
  } else {
    expr::Context& job_context = scratch;
    expr::Value needs_context = expr::Value::object();
    for (const auto& need : job.needs)
      needs_context[need.value] = {{"result", "success"}, {"outputs", expr::Value::object()}};
    job_context.contexts["needs"] = std::move(needs_context);
    restore_context(job_context, context, "matrix");
    // (An error ends the whole plan, so the scratch is only put back on success.)
    KILN_TRY(auto planned, plan_job(job, job_context, prefix.empty() ? matrix_filter : Filter{}));
    json instances = json::array();
    for (const auto& instance : planned.instances) {
      expr::Context& instance_context = job_context;
      instance_context.contexts["matrix"] = instance.matrix.is_null()
                                                ? expr::Value::object()
                                                : expr::Value::parse(instance.matrix.dump());
      json labels = json::array();
      if (auto resolved = instance_labels(job.runs_on, instance_context)) {
        KILN_TRY_VOID(check_served_labels(*resolved, host));
        for (const auto& label : *resolved) labels.push_back(label.value);
      } else {  // a value only the run has (a needs output): shown as written
        for (const auto& label : job.runs_on.labels) labels.push_back(label.value);
      }
      instances.push_back({{"key", prefix + instance.key},
                           {"name", prefix + instance.name},
                           {"matrix", instance.matrix},
                           {"runs_on", labels}});
    }
    restore_context(job_context, context, "needs");
    restore_context(job_context, context, "matrix");
    entry["matrix_deferred"] = false;
    entry["fail_fast"] = planned.fail_fast;
    entry["max_parallel"] = planned.max_parallel;
    entry["instances"] = instances;
  }
  return entry;
}

}  // namespace

namespace {

struct CalledMap {
  const std::map<std::string, std::shared_ptr<const workflow::CalledWorkflow>>& workflows;
  const std::map<std::string, std::string>& unresolved;
};

// The plan of the jobs `ids` of one workflow file (`prefix` "caller / " for a called one), each
// caller job followed by the jobs of its calls, one call per instance.
Result<void> plan_jobs(nlohmann::ordered_json& jobs, const workflow::Workflow& wf,
                       const std::vector<std::string>& ids, const expr::Context& context,
                       const std::string& prefix, const Filter& matrix_filter,
                       const gpu::GpuLabelMap& host, const CalledMap& called, int level) {
  using json = nlohmann::ordered_json;
  expr::Context scratch = context;
  for (const auto& id : ids) {
    const auto& job = *wf.find_job(id);
    KILN_TRY(auto entry, plan_entry(job, context, scratch, prefix, matrix_filter, host));
    if (!job.calls_workflow()) {
      jobs.push_back(std::move(entry));
      continue;
    }
    entry["uses"] = job.uses->value;
    if (auto why = called.unresolved.find(job.uses->value); why != called.unresolved.end())
      entry["unresolved"] = why->second;
    auto found = called.workflows.find(job.uses->value);
    json instances = entry["instances"];
    jobs.push_back(std::move(entry));
    if (found == called.workflows.end() || level >= workflow::k_max_workflow_levels) continue;
    const auto& target = found->second->workflow;
    if (!target.find_trigger("workflow_call")) continue;
    std::vector<std::string> called_ids;
    for (const auto& called_job : target.jobs) called_ids.push_back(called_job.id);
    for (const auto& instance : instances) {
      expr::Context instance_context = context;
      instance_context.contexts["needs"] = expr::Value::object();
      for (const auto& need : job.needs)
        instance_context.contexts["needs"][need.value] = {{"result", "success"},
                                                          {"outputs", expr::Value::object()}};
      instance_context.contexts["matrix"] = instance["matrix"].is_null()
                                                ? expr::Value::object()
                                                : expr::Value::parse(instance["matrix"].dump());
      KILN_TRY(auto prepared, prepare_call(job, target, instance_context, {}));
      expr::Context called_context;
      called_context.contexts = std::move(prepared.contexts);
      called_context.contexts["env"] = expr::Value::object();
      KILN_TRY_VOID(plan_jobs(jobs, target, called_ids, called_context,
                              instance["key"].get<std::string>() + " / ", matrix_filter, host,
                              called, level + 1));
    }
  }
  return {};
}

}  // namespace

Result<nlohmann::ordered_json> plan_json(const RunOptions& options) {
  using json = nlohmann::ordered_json;
  KILN_TRY(auto repo, inspect_repository(options.repository));
  KILN_TRY(auto event, make_event(options, repo));
  KILN_TRY(auto selection, select_workflows(options, repo, event));
  if (workflow::has_errors(selection.diagnostics))
    return std::unexpected(diagnostics_error(selection.diagnostics));

  json plan = {
      {"event",
       {{"name", event.name},
        {"ref", event.ref},
        {"sha", event.sha},
        {"changed_files", event.changed_files_known ? json(event.changed_files) : json(nullptr)}}},
      {"workflows", json::array()},
      {"not_triggered", json::array()},
      {"warnings", json::array()}};
  for (const auto& diagnostic : selection.diagnostics)
    plan["warnings"].push_back(diagnostic.to_string());
  for (const auto& [path, reason] : selection.not_triggered)
    plan["not_triggered"].push_back({{"workflow", path}, {"reason", reason}});

  for (const auto& selected : selection.triggered) {
    const auto& wf = selected.workflow;
    expr::Context context;
    context.contexts["github"] = {{"event_name", event.name},
                                  {"ref", event.ref},
                                  {"sha", event.sha},
                                  {"event", event.payload},
                                  {"repository", repo.name},
                                  {"workflow", selected.name},
                                  {"run_id", "0"},
                                  {"run_number", "0"}};
    std::map<std::string, std::string> input_values = event.inputs;
    if (const auto* trigger = wf.find_trigger("workflow_dispatch");
        trigger && event.name == "workflow_dispatch") {
      KILN_TRY(input_values, plan::resolve_dispatch_inputs(*trigger, event.inputs, context));
    }
    context.contexts["inputs"] = typed_inputs(wf, input_values);
    context.contexts["vars"] = expr::Value::object();
    for (const auto& [key, value] : options.vars) context.contexts["vars"][key] = value;
    context.contexts["secrets"] = expr::Value::object();
    context.contexts["env"] = expr::Value::object();

    KILN_TRY(auto job_ids, jobs_to_run(wf, options.job_filter));
    json jobs = json::array();
    KILN_TRY_VOID(plan_jobs(jobs, wf, job_ids, context, "", options.matrix_filter,
                            options.gpu_labels, CalledMap{selection.called, selection.unresolved},
                            1));
    plan["workflows"].push_back(
        {{"workflow", selected.path.string()}, {"name", selected.name}, {"jobs", jobs}});
  }
  // snapshot: is planned as written, once said.
  std::string snapshots;
  for (const auto& wf : plan["workflows"])
    for (const auto& job : wf["jobs"])
      if (job.contains("snapshot"))
        snapshots += (snapshots.empty() ? "'" : ", '") + job["id"].get<std::string>() + "'";
  if (!snapshots.empty())
    plan["warnings"].push_back(fmt::format(
        "kiln builds no runner images: the snapshot of job {} is planned, and not taken when "
        "the job runs",
        snapshots));
  return plan;
}

std::string plan_text(const nlohmann::ordered_json& plan) {
  std::string out = fmt::format("event {} {} {}\n", plan["event"]["name"].get<std::string>(),
                                plan["event"]["ref"].get<std::string>(),
                                plan["event"]["sha"].get<std::string>().substr(0, 12));
  for (const auto& wf : plan["workflows"]) {
    out += fmt::format("\n{} ({})\n", wf["name"].get<std::string>(),
                       wf["workflow"].get<std::string>());
    for (const auto& job : wf["jobs"]) {
      std::string needs;
      for (const auto& need : job["needs"])
        needs += (needs.empty() ? "" : ", ") + need.get<std::string>();
      out += fmt::format("  job {}{}\n", job["id"].get<std::string>(),
                         needs.empty() ? "" : " (needs " + needs + ")");
      if (job.contains("uses"))
        out += fmt::format("    calls {}\n", job["uses"].get<std::string>());
      if (job.contains("unresolved"))
        out += fmt::format("    unresolved: {}\n", job["unresolved"].get<std::string>());
      if (job.contains("snapshot"))
        out += fmt::format("    snapshot {} (not taken: kiln builds no images)\n",
                           job["snapshot"]["image-name"].get<std::string>());
      if (job["matrix_deferred"].get<bool>()) {
        out += "    matrix: decided when its needs finish\n";
      } else {
        for (const auto& instance : job["instances"]) {
          std::string labels;
          for (const auto& label : instance["runs_on"])
            labels += (labels.empty() ? "" : ", ") + label.get<std::string>();
          out += fmt::format("    {}  runs-on: [{}]\n", instance["key"].get<std::string>(), labels);
        }
      }
      if (!job["container"].is_null())
        out += fmt::format("    container: {}\n", job["container"].get<std::string>());
      for (const auto& step : job["steps"])
        out += fmt::format("    - {}\n", step.get<std::string>());
    }
  }
  for (const auto& skipped : plan["not_triggered"])
    out += fmt::format("\nnot triggered: {}: {}\n", skipped["workflow"].get<std::string>(),
                       skipped["reason"].get<std::string>());
  return out;
}

}  // namespace kiln::engine
