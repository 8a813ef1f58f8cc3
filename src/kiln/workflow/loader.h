#pragma once
// YAML → Workflow, with every problem reported as a Diagnostic at FILE:LINE:COL.

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/model.h"

namespace kiln::workflow {

struct LoadResult {
  std::optional<Workflow> workflow;  // absent when the file has errors
  Diagnostics diagnostics;           // errors and warnings, in file order
};

// Loads and validates one workflow file. `display_path` is what diagnostics print.
LoadResult load_workflow_file(const std::filesystem::path& path,
                              const std::filesystem::path& display_path);
LoadResult load_workflow_text(std::string_view yaml, const std::filesystem::path& display_path);

// The workflow files of a repository (.github/workflows/*.yml|*.yaml, sorted by name), or of
// `-W PATH` (a file, or a directory searched the same way).
Result<std::vector<std::filesystem::path>> discover_workflows(const std::filesystem::path& path);

}  // namespace kiln::workflow
