#pragma once
// Built-in actions: the few `uses:` targets kiln runs in-process, because a runner with no
// network cannot download actions. They follow the inputs, defaults and outputs of the real
// actions (actions/checkout, upload-artifact, download-artifact, cache, cache/restore,
// cache/save, and github/codeql-action/upload-sarif, whose SARIF results become the job's
// annotations: sarif.h) for any @ref; every other `uses:` (except local `./` actions, which the
// step runner handles) fails its step with a message that names the action.
//
// Failures a workflow author can cause (bad inputs, missing files, unknown refs) are returned
// as ActionResult{success = false, error = "..."}; an Error is returned only when kiln itself
// could not do its work (its own storage, spawning git). Both fail the step.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/run_as.h"
#include "kiln/exec/log_sink.h"

namespace kiln::exec {

// What a built-in action may touch; filled by the engine for each step.
struct ActionContext {
  std::filesystem::path workspace;      // GITHUB_WORKSPACE of the job (exists, may be empty)
  std::filesystem::path repository;     // the local git repository the run is for
  std::string sha;                      // the event's commit
  std::string ref;                      // the event's ref (refs/heads/main, refs/tags/v1, ...)
  std::filesystem::path artifact_root;  // per run: artifacts are stored under here by name
  std::filesystem::path cache_root;     // shared across runs of this repository
  std::function<void(std::string_view)> log;  // one log line (the engine masks and stores it)
  std::map<std::string, std::string> env;     // the step's environment (HOME, GITHUB_*, ...)
  // jobs.user: the files a step names (artifact and cache paths) are read only when that user
  // could read them, cache entries restored only where it could write (core/run_as.h).
  const core::RunAs* run_as = nullptr;
};

// Work a step leaves for the end of the job, like a JavaScript action's `post:` entry point.
struct PostAction {
  std::string uses;                          // the step's `uses:` ("actions/cache@v4")
  std::string description;                   // one line for the log: "Save cache 'key'"
  std::map<std::string, std::string> state;  // what the main step saved for the post step
  bool always = false;  // run even when the job failed (actions/cache `save-always`)
};

// One artifact as stored by upload-artifact; the engine records it in the store.
struct ArtifactInfo {
  std::string name;
  std::filesystem::path path;  // the directory holding the artifact's files
  std::uint64_t size = 0;      // bytes, all files together
  std::size_t files = 0;
  int retention_days = 0;  // as asked; 0: the store's default
};

struct ActionResult {
  bool success = true;
  std::string error;  // one line, shown in the log, when !success
  std::vector<std::pair<std::string, std::string>> outputs;  // step outputs (cache-hit, ...)
  std::optional<PostAction> post;                            // to run at the end of the job
  std::vector<ArtifactInfo> artifacts_uploaded;              // for the engine to record
  // For the job's annotations (check runs, the log), as `::error file=...` gives them; read
  // from SARIF logs by upload-sarif. Not masked yet: the engine masks them.
  std::vector<Annotation> annotations;
};

// True for the built-in actions, at any ref: "actions/checkout@v4", "actions/cache/save@main".
// The owner/name part compares case-insensitively, as GitHub's does.
bool is_builtin_action(std::string_view uses);

// The one-line error for a `uses:` kiln cannot run (anything is_builtin_action rejects).
std::string unavailable_action_message(std::string_view uses);

// Runs a built-in action. `with` holds the step's inputs, already interpolated; inputs the
// action does not know are reported as a warning line (like GitHub's "Unexpected input(s)").
// A `uses:` that is not built in gives success = false with unavailable_action_message().
Result<ActionResult> run_builtin_action(std::string_view uses,
                                        const std::map<std::string, std::string>& with,
                                        const ActionContext& context);

// Runs the post step a built-in action returned. The engine decides whether to call it (on
// job success, or always when post.always); this just does the work.
Result<ActionResult> run_post_action(const PostAction& post, const ActionContext& context);

}  // namespace kiln::exec
