#pragma once
// The values that cross a call of a reusable workflow: `with:` inputs typed as the called
// workflow declares them (defaults for the rest), the secrets it is passed, and its outputs
// evaluated from its jobs once they are done. The scheduler runs the called jobs.

#include <map>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/model.h"

namespace kiln::engine {

struct CallValues {
  expr::Value inputs = expr::Value::object();
  expr::Value secrets = expr::Value::object();
};

// `context` is the caller job instance's (github, inputs, secrets, vars, needs, matrix,
// strategy). Errors: a missing required input, a value of the wrong type, at the caller.
Result<CallValues> evaluate_call(const workflow::Job& caller, const workflow::Trigger& call,
                                 const expr::Context& context);

// What one call of a reusable workflow starts with.
struct PreparedCall {
  // github (the caller's), inputs, secrets (only those passed) and vars.
  expr::Value contexts = expr::Value::object();
  std::vector<std::pair<std::string, std::string>> env;  // --env-file, then the called `env:`
  std::string concurrency_group;  // the caller job's `concurrency`, evaluated; empty: none
  bool cancel_in_progress = false;
};

// Prepares the call of `called` by `caller` (one instance of it, whose contexts are `context`).
Result<PreparedCall> prepare_call(const workflow::Job& caller, const workflow::Workflow& called,
                                  const expr::Context& context,
                                  const std::map<std::string, std::string>& extra_env);

// on.workflow_call.outputs, evaluated with `jobs` ({id: {result, outputs}}) added to
// `context`; an output that cannot be evaluated is left out and described in `warnings`.
std::map<std::string, std::string> evaluate_call_outputs(const workflow::Trigger& call,
                                                         expr::Context context,
                                                         const expr::Value& jobs,
                                                         std::vector<std::string>& warnings);

}  // namespace kiln::engine
