// kiln validate: loads workflow files and prints every problem as FILE:LINE:COL: error: ...

#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/container/check.h"
#include "kiln/engine/planner.h"
#include "kiln/workflow/loader.h"

namespace kiln::cli {
namespace {

int validate(const std::vector<std::string>& paths, bool quiet) {
  std::vector<std::string> targets = paths;
  if (targets.empty()) targets.push_back(".");
  int files = 0, errors = 0, warnings = 0;
  for (const auto& target : targets) {
    std::error_code ec;
    if (!std::filesystem::exists(target, ec)) {
      fmt::print(stderr, "{}: error: no such file or directory\n", target);
      ++errors;
      continue;
    }
    auto found = workflow::discover_workflows(target);
    if (!found) {
      ++errors;
      report_error(found.error());
      continue;
    }
    if (found->empty()) {
      fmt::print(stderr, "{}: error: no workflow files (.github/workflows/*.yml or *.yaml)\n",
                 target);
      ++errors;
    }
    for (const auto& file : *found) {
      ++files;
      auto display = file.lexically_normal();
      auto loaded = workflow::load_workflow_file(file, display);
      if (loaded.workflow) {
        auto gpu_errors = engine::check_gpu_labels(*loaded.workflow);
        auto container_errors = container::check_containers(*loaded.workflow);
        gpu_errors.insert(gpu_errors.end(), container_errors.begin(), container_errors.end());
        loaded.diagnostics.insert(loaded.diagnostics.end(), gpu_errors.begin(), gpu_errors.end());
      }
      for (const auto& diagnostic : loaded.diagnostics) {
        fmt::print(stderr, "{}\n", diagnostic.to_string());
        (diagnostic.severity == workflow::Severity::error ? errors : warnings)++;
      }
    }
  }
  if (!quiet)
    fmt::print("{} workflow file{} checked: {} error{}, {} warning{}\n", files,
               files == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
               warnings == 1 ? "" : "s");
  return errors ? 2 : 0;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto quiet = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("validate", "check workflow files; errors as FILE:LINE:COL");
  cmd->add_option("paths", *paths, "workflow files or directories (default: .)");
  cmd->add_flag("-q,--quiet", *quiet, "print only the problems");
  cmd->callback([paths, quiet, &exit_code] { exit_code = validate(*paths, *quiet); });
}

}  // namespace kiln::cli
