#include "kiln/engine/execute/action_runner.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/plan/planner.h"
#include "kiln/workflow/action.h"
#include "kiln/workflow/expand.h"

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;
using workflow::Action;
using workflow::ActionKind;

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool in_path(const std::string& program, const core::Environment& env) {
  auto it = env.find("PATH");
  std::string path = it == env.end() ? "/usr/bin:/bin" : it->second;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    fs::path candidate = fs::path(path.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// The inputs context of an action: `with` values, then the defaults (evaluated with the job's
// contexts) of inputs not given. Input names ignore case, as on GitHub.
Result<expr::Value> action_inputs(ActionHost& host, const Action& action, const ActionCall& call) {
  expr::Value inputs = expr::Value::object();
  std::vector<std::string> unexpected;
  for (const auto& [name, value] : call.with) {
    const auto* input = action.find_input(name);
    if (!input) unexpected.push_back(name);
    inputs[input ? input->name : name] = value;
  }
  if (!unexpected.empty()) {
    std::string valid;
    for (const auto& input : action.inputs)
      valid += (valid.empty() ? "'" : ", '") + input.name + "'";
    std::string names;
    for (const auto& name : unexpected) names += (names.empty() ? "'" : ", '") + name + "'";
    host.log("warning", fmt::format("Unexpected input(s) {}, valid inputs are [{}]", names, valid));
  }
  for (const auto& input : action.inputs) {
    if (inputs.contains(input.name)) continue;
    std::string value;
    if (input.default_value) {
      auto context = host.job_context();
      KILN_TRY(value,
               expr::interpolate(input.default_value->value, context, input.default_value->where));
    } else if (input.required) {
      host.log("warning", fmt::format("Input required and not supplied: {}", input.name));
    }
    inputs[input.name] = value;
  }
  return inputs;
}

class CompositeRun {
 public:
  CompositeRun(ActionHost& host, const ActionCall& call, const Action& action, fs::path dir,
               expr::Value inputs)
      : host_(host),
        call_(call),
        action_(action),
        dir_(std::move(dir)),
        inputs_(std::move(inputs)) {}

  ActionOutcome run() {
    ActionOutcome outcome;
    for (const auto& step : action_.steps) run_step(step);
    if (failed_) outcome.conclusion = Conclusion::failure;
    auto context = make_context(call_.env);
    for (const auto& output : action_.outputs) {
      if (!output.value) continue;
      auto value = expr::interpolate(output.value->value, context, output.value->where);
      if (!value) {
        host_.log("warning", value.error().to_string());
        continue;
      }
      outcome.outputs[output.name] = *value;
    }
    return outcome;
  }

 private:
  expr::Context make_context(const std::map<std::string, std::string>& env) {
    auto context = host_.job_context();
    context.contexts["inputs"] = inputs_;
    context.contexts["steps"] = steps_;
    context.contexts["github"]["action_path"] = dir_.string();
    for (const auto& [key, value] : env) context.contexts["env"][key] = value;
    // Status functions inside a composite action see its own steps.
    context.failed = failed_;
    return context;
  }

  static std::string step_name(const workflow::Step& step) {
    if (step.uses) return "Run " + step.uses->value;
    if (step.run) return "Run " + step.run->value.substr(0, step.run->value.find('\n'));
    return fmt::format("Step {}", step.index + 1);
  }

  void run_step(const workflow::Step& step) {
    std::map<std::string, std::string> env = call_.env;
    auto context = make_context(env);
    std::string condition = step.if_condition ? step.if_condition->value : "success()";
    SourceLocation where = step.if_condition ? step.if_condition->where : step.where;
    auto should_run = expr::evaluate_condition(condition, context, where);
    Conclusion outcome = Conclusion::success;
    std::map<std::string, std::string> outputs;
    if (!should_run) {
      host_.log("error", should_run.error().to_string());
      outcome = Conclusion::failure;
    } else if (!*should_run) {
      outcome = Conclusion::skipped;
    } else {
      std::string name = step_name(step);
      if (step.name) {
        auto value = expr::interpolate(step.name->value, context, step.name->where);
        if (value) name = *value;
      }
      host_.log("kiln", fmt::format("▶ {}", name));
      outcome = execute(step, env, context, outputs);
    }
    Conclusion conclusion = outcome;
    if (outcome == Conclusion::failure && step.continue_on_error) {
      auto flag = evaluate_flag(*step.continue_on_error, context);
      if (flag && *flag) conclusion = Conclusion::success;
    }
    if (conclusion == Conclusion::failure || conclusion == Conclusion::cancelled) failed_ = true;
    if (step.id) {
      expr::Value values = expr::Value::object();
      for (const auto& [key, value] : outputs) values[key] = value;
      steps_[step.id->value] = {{"outputs", values},
                                {"outcome", std::string(store::to_string(outcome))},
                                {"conclusion", std::string(store::to_string(conclusion))}};
    }
  }

  Conclusion execute(const workflow::Step& step, std::map<std::string, std::string>& env,
                     expr::Context& context, std::map<std::string, std::string>& outputs) {
    auto step_env = workflow::expand_mapping(step.env, context, "env");
    if (!step_env) return fail(step_env.error());
    for (const auto& [key, text] : *step_env) {
      auto value = expr::interpolate(text.value, context, text.where);
      if (!value) return fail(value.error());
      env[key] = *value;
      context.contexts["env"][key] = *value;
    }
    if (step.uses) {
      ActionCall nested;
      nested.uses = step.uses->value;
      nested.where = step.uses->where;
      nested.step_name = step.name ? step.name->value : step_name(step);
      nested.env = env;
      nested.depth = call_.depth + 1;
      auto with = workflow::expand_mapping(step.with, context, "with");
      if (!with) return fail(with.error());
      for (const auto& [key, text] : *with) {
        auto value = expr::interpolate(text.value, context, text.where);
        if (!value) return fail(value.error());
        nested.with[key] = *value;
      }
      const auto& roots = host_.references();
      if (!nested.uses.starts_with("./") && roots.is_builtin_action &&
          roots.is_builtin_action(nested.uses)) {
        auto full = host_.job_environment();
        for (const auto& [key, value] : env) full[key] = value;
        host_.finish_environment(full);
        return host_.run_builtin(nested.uses, nested.with, full, outputs);
      }
      auto result = run_action(host_, nested);
      outputs = std::move(result.outputs);
      return result.conclusion;
    }
    auto script = expr::interpolate(step.run->value, context, step.run->where);
    if (!script) return fail(script.error());
    exec::StepRequest request;
    request.script = *script;
    if (step.shell) {
      auto shell = expr::interpolate(step.shell->value, context, step.shell->where);
      if (!shell) return fail(shell.error());
      request.shell = *shell;
    }
    request.working_directory = host_.workspace();
    if (step.working_directory) {
      auto directory =
          expr::interpolate(step.working_directory->value, context, step.working_directory->where);
      if (!directory) return fail(directory.error());
      fs::path path(*directory);
      request.working_directory = path.is_absolute() ? path : host_.workspace() / path;
    }
    request.env = host_.job_environment();
    for (const auto& [key, value] : env) request.env[key] = value;
    request.env["GITHUB_ACTION_PATH"] = dir_.string();
    host_.finish_environment(request.env);
    auto result = host_.run_process(std::move(request));
    if (!result) return fail(result.error());
    outputs = result->outputs;
    switch (result->outcome) {
      case exec::StepOutcome::success:
        return Conclusion::success;
      case exec::StepOutcome::cancelled:
        return Conclusion::cancelled;
      default:
        return Conclusion::failure;
    }
  }

  Conclusion fail(const Error& error) {
    host_.log("error", error.to_string());
    return Conclusion::failure;
  }

  ActionHost& host_;
  const ActionCall& call_;
  const Action& action_;
  fs::path dir_;
  expr::Value inputs_;
  expr::Value steps_ = expr::Value::object();
  bool failed_ = false;
};

// Runs one entry point of a JavaScript action with `node`.
Result<exec::StepResult> run_node(ActionHost& host, const fs::path& dir, const std::string& file,
                                  core::Environment env) {
  if (!in_path("node", env))
    return make_error(ErrorCode::invalid_input,
                      "JavaScript actions run with the machine's Node.js, and there is no `node` "
                      "in PATH");
  exec::StepRequest request;
  request.shell = "bash";
  request.script = "exec node " + shell_quote((dir / file).string());
  request.working_directory = host.workspace();
  request.env = std::move(env);
  return host.run_process(std::move(request));
}

bool condition_holds(ActionHost& host, const std::optional<workflow::Text>& condition) {
  auto context = host.job_context();
  auto value = condition ? expr::evaluate_condition(condition->value, context, condition->where)
                         : expr::evaluate_condition("always()", context);
  if (!value) {
    host.log("error", value.error().to_string());
    return false;
  }
  return *value;
}

// The environment of a JavaScript action's entry points.
core::Environment node_environment(ActionHost& host, const ActionCall& call, const fs::path& dir,
                                   const expr::Value& inputs) {
  core::Environment env = host.job_environment();
  for (const auto& [key, value] : call.env) env[key] = value;
  for (const auto& [name, value] : inputs.items())
    env["INPUT_" + workflow::input_variable(name)] = expr::to_text(value);
  env["GITHUB_ACTION_PATH"] = dir.string();
  // owner/repo of an action of another repository; empty for a local one.
  std::string repository;
  if (!call.uses.starts_with("./")) {
    std::string name = call.uses.substr(0, call.uses.rfind('@'));
    auto slash = name.find('/', name.find('/') + 1);
    repository = name.substr(0, slash);
  }
  env["GITHUB_ACTION_REPOSITORY"] = repository;
  host.finish_environment(env);
  return env;
}

ActionOutcome run_node_action(ActionHost& host, const ActionCall& call, const Action& action,
                              const fs::path& dir, const expr::Value& inputs) {
  ActionOutcome outcome;
  core::Environment env = node_environment(host, call, dir, inputs);
  auto main = run_node(host, dir, action.main->value, env);
  if (!main) {
    host.log("error", main.error().to_string());
    outcome.conclusion = Conclusion::failure;
    return outcome;
  }
  outcome.outputs = main->outputs;
  if (main->outcome == exec::StepOutcome::cancelled)
    outcome.conclusion = Conclusion::cancelled;
  else if (main->outcome != exec::StepOutcome::success)
    outcome.conclusion = Conclusion::failure;
  if (action.post) {
    core::Environment post_env = env;
    for (const auto& [key, value] : main->state) post_env["STATE_" + key] = value;
    host.add_post([&host, dir, post = action.post->value, post_if = action.post_if, post_env,
                   name = call.step_name] {
      if (!condition_holds(host, post_if)) return true;
      host.log("kiln", fmt::format("Post {}", name));
      auto result = run_node(host, dir, post, post_env);
      if (!result) {
        host.log("error", result.error().to_string());
        return false;
      }
      return result->outcome == exec::StepOutcome::success;
    });
  }
  return outcome;
}

// An action of the mirror with its metadata, or nullopt (with nothing logged) for any other.
std::optional<std::pair<Action, fs::path>> mirrored_action(ActionHost& host,
                                                           const ActionCall& call) {
  const auto& roots = host.references();
  if (call.uses.starts_with("./") || call.uses.starts_with("docker://") ||
      (!roots.mirror && !roots.fetch) ||
      (roots.is_builtin_action && roots.is_builtin_action(call.uses)))
    return std::nullopt;
  auto resolved = workflow::resolve_action(call.uses, roots, call.where);
  if (!resolved) return std::nullopt;
  auto file = *workflow::find_action_file(resolved->path);
  auto loaded = workflow::load_action_file(file, resolved->display / file.filename());
  if (!loaded.action) return std::nullopt;
  return std::pair{std::move(*loaded.action), fs::absolute(resolved->path).lexically_normal()};
}

}  // namespace

Conclusion run_pre_steps(ActionHost& host, const std::vector<ActionCall>& calls) {
  for (const auto& call : calls) {
    auto found = mirrored_action(host, call);
    if (!found) continue;  // the step itself reports what is wrong with it
    const auto& [action, dir] = *found;
    if (action.kind != ActionKind::node || !action.pre) continue;
    if (!condition_holds(host, action.pre_if)) continue;
    host.log("kiln", fmt::format("Pre {}", call.step_name));
    auto inputs = action_inputs(host, action, call);
    if (!inputs) {
      host.log("error", inputs.error().to_string());
      return Conclusion::failure;
    }
    auto result =
        run_node(host, dir, action.pre->value, node_environment(host, call, dir, *inputs));
    if (!result) {
      host.log("error", result.error().to_string());
      return Conclusion::failure;
    }
    if (result->outcome != exec::StepOutcome::success) {
      host.log("error", fmt::format("Pre {} failed", call.step_name));
      return Conclusion::failure;
    }
  }
  return Conclusion::success;
}

ActionOutcome run_action(ActionHost& host, const ActionCall& call) {
  ActionOutcome failed{Conclusion::failure, {}};
  if (call.depth > workflow::k_max_action_depth) {
    host.log("error", fmt::format("{}: '{}' nests actions {} deep; GitHub allows at most {}",
                                  call.where.to_string(), call.uses, call.depth,
                                  workflow::k_max_action_depth));
    return failed;
  }
  if (call.uses.starts_with("docker://")) {
    host.log("error", fmt::format("{}: '{}' runs a Docker image: Docker actions need the "
                                  "container engine, which this kiln does not have yet",
                                  call.where.to_string(), call.uses));
    return failed;
  }
  auto resolved = workflow::resolve_action(call.uses, host.references(), call.where);
  if (!resolved) {
    std::string hint = call.uses.starts_with("./")
                           ? " (local actions are read from the workspace: run actions/checkout "
                             "before this step)"
                           : "";
    host.log("error", resolved.error().to_string() + hint);
    return failed;
  }
  if (!resolved->sha.empty())
    host.log("kiln", fmt::format("Using {} at commit {}", call.uses, resolved->sha));
  auto file = *workflow::find_action_file(resolved->path);
  auto loaded = workflow::load_action_file(file, resolved->display / file.filename());
  for (const auto& diagnostic : loaded.diagnostics)
    host.log(diagnostic.severity == workflow::Severity::error ? "error" : "warning",
             diagnostic.to_string());
  if (!loaded.action) return failed;
  const Action& action = *loaded.action;
  auto inputs = action_inputs(host, action, call);
  if (!inputs) {
    host.log("error", inputs.error().to_string());
    return failed;
  }
  fs::path dir = fs::absolute(resolved->path).lexically_normal();
  switch (action.kind) {
    case ActionKind::composite:
      return CompositeRun(host, call, action, dir, std::move(*inputs)).run();
    case ActionKind::node:
      return run_node_action(host, call, action, dir, *inputs);
    case ActionKind::docker:
      host.log("error", fmt::format("{}: action '{}' runs in a Docker container (runs.using: "
                                    "docker): Docker actions need the container engine, which "
                                    "this kiln does not have yet",
                                    call.where.to_string(), call.uses));
      return failed;
  }
  return failed;
}

}  // namespace kiln::engine
