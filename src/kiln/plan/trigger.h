#pragma once
// Does this workflow run for this event? GitHub's rules for on.<event> filters:
// - push: a branch push is filtered by branches/branches-ignore, a tag push by
//   tags/tags-ignore. When only one kind of filter is defined, pushes of the other kind of ref
//   do not run the workflow; with neither, every push runs it. Paths filters apply to branch
//   pushes only (never to tags).
// - pull_request, pull_request_target: branch filters match the BASE branch; activity types
//   default to opened, synchronize and reopened.
// - paths: runs when any changed file is included (the last matching pattern decides, `!`
//   excludes); paths-ignore: runs unless every changed file is ignored. An unknown diff runs.
// - branch, tag and path filters must all be satisfied.
// - workflow_dispatch, schedule and any other event: the workflow runs when it lists the event
//   (schedule: and, when the event names its cron text, one of the workflow's crons is it).
// Combinations that GitHub forbids (branches with branches-ignore, paths with paths-ignore) are
// rejected by the loader; here the ignore list is simply applied as well.

#include <map>
#include <string>

#include "kiln/core/result.h"
#include "kiln/plan/event.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/model.h"

namespace kiln::plan {

struct TriggerDecision {
  bool runs = false;
  // Why not, for humans: "branch 'dev' does not match on.push.branches". Empty when it runs.
  std::string reason;
};

TriggerDecision match_trigger(const workflow::Workflow& workflow, const Event& event);

// workflow_dispatch inputs: `given` checked against the trigger's input specs. Unknown names,
// missing required inputs and values of the wrong type are errors. Defaults fill the rest; an
// input without a default is "false" for a boolean and "" otherwise. Booleans come out as
// "true"/"false" (accepted in any case); numbers must parse whole as a finite number; a choice
// must be one of its options. A default written as an expression (`${{ github.ref ==
// 'refs/heads/main' }}`) is evaluated with `context` (the run's github context).
Result<std::map<std::string, std::string>> resolve_dispatch_inputs(
    const workflow::Trigger& trigger, const std::map<std::string, std::string>& given,
    const expr::Context& context = {});

}  // namespace kiln::plan
