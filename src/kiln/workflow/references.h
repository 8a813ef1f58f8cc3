#pragma once
// Following `uses:`: where a called reusable workflow or an action lives, and `kiln validate`'s
// checks of every call (inputs, secrets, types, cycles, nesting depth) at FILE:LINE:COL of the
// caller.
//
// Local references (`./path`) are relative to the repository root. References to another
// repository (`owner/repo/path@ref`) are read from the actions mirror, a directory holding one
// checkout per repository and ref: MIRROR/owner/repo@ref/ (see docs/workflows.md); nothing is
// downloaded.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/workflow/action.h"
#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/model.h"

namespace kiln::workflow {

// GitHub's limits: a caller and up to nine levels of reusable workflows on github.com (GitHub
// Enterprise Server: four levels in all), and composite actions nested up to ten deep.
constexpr int k_max_workflow_levels = 10;
constexpr int k_max_action_depth = 10;

// A repository of another owner, fetched at a commit (exec/action_fetch.h).
struct FetchedRepository {
  std::filesystem::path path;  // its checkout
  std::string sha;             // the commit the ref resolved to
  std::string url;             // where it came from
};
using RepositoryFetcher = std::function<Result<FetchedRepository>(
    std::string_view owner, std::string_view repo, std::string_view ref)>;

struct ReferenceRoots {
  std::filesystem::path repository;  // where ./ references start
  std::filesystem::path display;     // how diagnostics name the repository ("" for relative paths)
  std::optional<std::filesystem::path> mirror;  // --actions-mirror / KILN_ACTIONS_MIRROR
  // Without a mirror: fetches owner/repo at a ref from the forge (kiln.yml actions.url).
  RepositoryFetcher fetch;
  // Actions the runner provides itself (actions/checkout, ...): never looked up on disk.
  std::function<bool(std::string_view)> is_builtin_action;
};

struct ResolvedReference {
  std::filesystem::path path;     // the workflow file, or the action's directory
  std::filesystem::path display;  // the same, as diagnostics print it
  std::string sha;                // fetched: the commit the ref resolved to
};

// A job's `uses:` → the reusable workflow's file (which must exist). Errors at `where`.
Result<ResolvedReference> resolve_workflow(std::string_view uses, const ReferenceRoots& roots,
                                           const SourceLocation& where);
// A step's `uses:` (./path or owner/repo[/path]@ref) → the action's directory, which must hold
// action.yml or action.yaml. Errors at `where`.
Result<ResolvedReference> resolve_action(std::string_view uses, const ReferenceRoots& roots,
                                         const SourceLocation& where);

// A called workflow as loaded while checking; shared by the engine, which runs it.
struct CalledWorkflow {
  std::filesystem::path display;  // the file as diagnostics and the store name it
  Workflow workflow;
};

struct ReferenceCheck {
  Diagnostics diagnostics;  // errors at the caller's FILE:LINE:COL, and the called files' own
  // Every reusable workflow reached, by the `uses:` text that calls it (local references are
  // relative to the repository root, so one text names one file).
  std::map<std::string, std::shared_ptr<const CalledWorkflow>> workflows;
  // Reusable workflows of other repositories that could not be had, by `uses:` text, with the
  // reason: the rest of the file is planned, and the call fails when it is reached.
  std::map<std::string, std::string> unresolved;
};

// Follows every job `uses:` (recursively) and every step `uses:` that names a local action or
// an action in the mirror (into composite actions): unknown, missing or mistyped inputs and
// secrets of reusable workflows, local files that are missing or not reusable, cycles and
// nesting beyond GitHub's limits are errors. A reusable workflow of another repository that
// cannot be had is a warning (ReferenceCheck::unresolved). Actions are looked up when their
// step runs, as on GitHub: one that cannot be found now (not in the mirror, or a local action
// that an earlier step checks out), an action.yml of another repository with errors, and
// unexpected or missing inputs are warnings; the step fails when it runs if it still cannot
// have the action. A job `uses: ./x.yml` inside a reusable workflow of another repository
// names that repository's file: it is read as `owner/repo/x.yml@ref`.
// `file` is the workflow's own file (the root of the chain of callers).
ReferenceCheck check_references(const Workflow& workflow, const std::filesystem::path& file,
                                const ReferenceRoots& roots);

// A `with:` value (as evaluated) given the type its reusable workflow declares: a boolean input
// takes a boolean or "true"/"false", a number input a number or a numeric text, a string input
// any scalar (as text). An error at `where` when it does not fit.
Result<nlohmann::json> typed_call_input(const InputSpec& spec, const nlohmann::json& value,
                                        const SourceLocation& where);

}  // namespace kiln::workflow
