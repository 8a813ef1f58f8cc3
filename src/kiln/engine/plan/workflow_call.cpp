#include "kiln/engine/plan/workflow_call.h"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/plan/planner.h"
#include "kiln/workflow/expand.h"
#include "kiln/workflow/references.h"

namespace kiln::engine {

Result<CallValues> evaluate_call(const workflow::Job& caller, const workflow::Trigger& call,
                                 const expr::Context& context) {
  CallValues values;
  const auto& uses = *caller.uses;
  for (const auto& [name, text] : caller.with) {
    const auto* spec = call.find_input(name);
    if (!spec)
      return fail_at(text.where, "unknown input '{}' of reusable workflow '{}'", name, uses.value);
    KILN_TRY(auto value, expr::evaluate_template(text.value, context, text.where));
    KILN_TRY(values.inputs[name], workflow::typed_call_input(*spec, value, text.where));
  }
  for (const auto& spec : call.inputs) {
    if (values.inputs.contains(spec.name)) continue;
    if (spec.default_value) {
      KILN_TRY(auto value, expr::evaluate_template(spec.default_value->value, context,
                                                   spec.default_value->where));
      KILN_TRY(values.inputs[spec.name],
               workflow::typed_call_input(spec, value, spec.default_value->where));
    } else if (spec.required) {
      return fail_at(uses.where,
                     "reusable workflow '{}' requires input '{}', which 'with' does "
                     "not give",
                     uses.value, spec.name);
    } else {
      // An input left out without a default: false, 0 or "" by its type.
      values.inputs[spec.name] = spec.type == "boolean"  ? expr::Value(false)
                                 : spec.type == "number" ? expr::Value(0)
                                                         : expr::Value("");
    }
  }
  const auto& secrets =
      context.contexts.contains("secrets") ? context.contexts["secrets"] : expr::Value::object();
  if (caller.secrets_inherit) {
    values.secrets = secrets;
  } else {
    for (const auto& [name, text] : caller.secrets) {
      KILN_TRY(auto value, expr::interpolate(text.value, context, text.where));
      values.secrets[name] = value;
    }
  }
  // GITHUB_TOKEN is passed to every called workflow.
  if (secrets.contains("GITHUB_TOKEN")) values.secrets["GITHUB_TOKEN"] = secrets["GITHUB_TOKEN"];
  return values;
}

Result<PreparedCall> prepare_call(const workflow::Job& caller, const workflow::Workflow& called,
                                  const expr::Context& context,
                                  const std::map<std::string, std::string>& extra_env) {
  PreparedCall prepared;
  KILN_TRY(auto values, evaluate_call(caller, *called.find_trigger("workflow_call"), context));
  // The called workflow sees the caller's github context and only what it is passed.
  auto& contexts = prepared.contexts;
  contexts["github"] = context.contexts.value("github", expr::Value::object());
  contexts["inputs"] = std::move(values.inputs);
  contexts["secrets"] = std::move(values.secrets);
  contexts["vars"] = context.contexts.value("vars", expr::Value::object());
  expr::Context env_context;
  env_context.contexts = contexts;
  env_context.contexts["env"] = expr::Value::object();
  for (const auto& [key, value] : extra_env) {
    prepared.env.emplace_back(key, value);
    env_context.contexts["env"][key] = value;
  }
  KILN_TRY(auto called_env, workflow::expand_mapping(called.env, env_context, "env"));
  for (const auto& [key, text] : called_env) {
    KILN_TRY(auto value, expr::interpolate(text.value, env_context, text.where));
    prepared.env.emplace_back(key, value);
    env_context.contexts["env"][key] = value;
  }
  if (caller.concurrency) {
    const auto& concurrency = *caller.concurrency;
    KILN_TRY(prepared.concurrency_group,
             expr::interpolate(concurrency.group.value, context, concurrency.group.where));
    if (concurrency.cancel_in_progress) {
      KILN_TRY(prepared.cancel_in_progress,
               evaluate_flag(*concurrency.cancel_in_progress, context));
    }
  }
  return prepared;
}

std::map<std::string, std::string> evaluate_call_outputs(const workflow::Trigger& call,
                                                         expr::Context context,
                                                         const expr::Value& jobs,
                                                         std::vector<std::string>& warnings) {
  std::map<std::string, std::string> outputs;
  context.contexts["jobs"] = jobs;
  for (const auto& output : call.outputs) {
    auto value = expr::interpolate(output.value.value, context, output.value.where);
    if (!value) {
      warnings.push_back(value.error().to_string());
      continue;
    }
    outputs[output.name] = *value;
  }
  return outputs;
}

}  // namespace kiln::engine
