#pragma once
// actions/checkout, offline: fetches from the run's local repository (never the network) into
// the workspace, the way the real action does it (git init, fetch of one commit at the asked
// depth, checkout), so the result looks like a GitHub checkout: the event's commit, a shallow
// history by default, and none of the repository's uncommitted changes.

#include <map>
#include <string>

#include "kiln/core/result.h"
#include "kiln/exec/actions.h"

namespace kiln::exec {

// Inputs (as the real action declares them): ref, path, clean (true), fetch-depth (1; 0 for
// all history, branches and tags), fetch-tags (false), submodules (false|true|recursive),
// sparse-checkout, sparse-checkout-cone-mode (true), repository (only the run's own one).
// token, ssh-*, persist-credentials, show-progress, set-safe-directory, github-server-url and
// reference are accepted and have no effect; lfs and filter warn. Outputs: ref, commit.
Result<ActionResult> run_checkout(const std::map<std::string, std::string>& with,
                                  const ActionContext& context);

}  // namespace kiln::exec
