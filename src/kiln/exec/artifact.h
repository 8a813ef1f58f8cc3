#pragma once
// actions/upload-artifact and actions/download-artifact (v4 semantics) on the local disk: an
// artifact is the directory <artifact_root>/<name>/ holding the uploaded files, laid out as
// the real action lays out its zip, so a download gives back the same tree.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/exec/actions.h"

namespace kiln::exec {

// GitHub's rule for artifact names: not empty, none of  " : < > | * ? \ /  CR LF, and not
// "." or "..". Returns an invalid_input error that says which character is wrong.
Status validate_artifact_name(std::string_view name);

// A stable, positive id for an artifact name (the artifact-id output).
std::string artifact_id(std::string_view name);

// The artifacts stored under `artifact_root`, sorted by name.
std::vector<std::string> list_artifacts(const std::filesystem::path& artifact_root);

// Inputs: name ('artifact'), path (required; lines of @actions/glob patterns, `!` excludes,
// relative to the workspace), if-no-files-found (warn|error|ignore, default warn),
// retention-days, compression-level, overwrite (false), include-hidden-files (false).
// Files are stored relative to the least common ancestor of the search paths (the literal
// prefix of each pattern); one plain file path is stored under its own name. Outputs:
// artifact-id, artifact-url (a file:// URL of the stored directory).
Result<ActionResult> run_upload_artifact(const std::map<std::string, std::string>& with,
                                         const ActionContext& context);

// Inputs: name (one artifact, into `path`), pattern (names, when `name` is not given; all
// artifacts when neither is), path (the workspace by default; `~` is HOME), merge-multiple
// (false: each artifact into path/<name>/), artifact-ids, and github-token, repository and
// run-id (only this run's artifacts exist). Output: download-path.
Result<ActionResult> run_download_artifact(const std::map<std::string, std::string>& with,
                                           const ActionContext& context);

}  // namespace kiln::exec
