// kiln validate: loads workflow files and prints every problem as FILE:LINE:COL: error: ...

#include <set>

#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/container/check.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/exec/actions.h"
#include "kiln/gpu/discover.h"
#include "kiln/workflow/loader.h"
#include "kiln/workflow/references.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateArgs {
  std::vector<std::string> paths;
  bool quiet = false;
  std::string config;
  std::string simulate_gpus;
  std::string actions_mirror;
  std::vector<std::string> labels;
};

// The repository a workflow file belongs to, for its ./ references: the directory above its
// .github/workflows, else the nearest directory above it holding .git, else the current one.
fs::path repository_of(const fs::path& file) {
  fs::path absolute = fs::absolute(file).lexically_normal();
  fs::path dir = absolute.parent_path();
  if (dir.filename() == "workflows" && dir.parent_path().filename() == ".github")
    return dir.parent_path().parent_path();
  std::error_code ec;
  for (fs::path up = dir; !up.empty(); up = up.parent_path()) {
    if (fs::exists(up / ".git", ec)) return up;
    if (up == up.parent_path()) break;
  }
  return fs::current_path(ec);
}

// The GPUs requests are checked against: --simulate-gpus, else this host's when it has some (a
// machine without GPUs cannot tell what a GPU host could serve).
Result<std::optional<gpu::Inventory>> inventory_to_check(const ValidateArgs& args,
                                                         const engine::RunOptions& options) {
  gpu::DiscoverOptions discover;
  if (!args.simulate_gpus.empty()) discover.simulate = args.simulate_gpus;
  discover.deadline = options.gpu_health.provider_deadline;
  KILN_TRY(auto inventory, gpu::discover_inventory(discover));
  if (inventory.gpus.empty() && args.simulate_gpus.empty()) return std::nullopt;
  return std::optional<gpu::Inventory>(std::move(inventory));
}

int validate(const ValidateArgs& args) {
  auto mirror = actions_mirror(args.actions_mirror);
  if (!mirror) return report_error(mirror.error());
  engine::RunOptions options;
  if (auto applied = apply_host_config(args.config, options); !applied)
    return report_error(applied.error());
  if (auto applied = apply_label_flags(args.labels, options); !applied)
    return report_error(applied.error());
  auto inventory = inventory_to_check(args, options);
  if (!inventory) return report_error(inventory.error());
  const gpu::Inventory* gpus = *inventory ? &**inventory : nullptr;
  const bool quiet = args.quiet;
  std::vector<std::string> targets = args.paths;
  if (targets.empty()) targets.push_back(".");
  int files = 0, errors = 0, warnings = 0;
  std::set<std::string> printed;
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
        auto gpu_errors = engine::check_job_settings(*loaded.workflow, options.gpu_labels, gpus,
                                                     options.slurm ? &*options.slurm : nullptr);
        auto container_errors =
            container::check_containers(*loaded.workflow, options.container_policy);
        gpu_errors.insert(gpu_errors.end(), container_errors.begin(), container_errors.end());
        loaded.diagnostics.insert(loaded.diagnostics.end(), gpu_errors.begin(), gpu_errors.end());
        // Calls of reusable workflows and local actions, followed into the files they name.
        workflow::ReferenceRoots roots;
        roots.repository = repository_of(file);
        // Called files are named the way this one is: from its repository's root as given.
        if (display.parent_path().filename() == "workflows" &&
            display.parent_path().parent_path().filename() == ".github") {
          roots.display = display.parent_path().parent_path().parent_path();
        } else {
          std::error_code relative_ec;
          roots.display =
              fs::relative(roots.repository, fs::current_path(relative_ec), relative_ec);
          if (relative_ec || roots.display == ".") roots.display.clear();
        }
        roots.mirror = *mirror;
        roots.fetch = options.actions_fetcher;
        roots.is_builtin_action = [](std::string_view uses) {
          return exec::is_builtin_action(uses);
        };
        auto checked = workflow::check_references(*loaded.workflow, file, roots);
        loaded.diagnostics.insert(loaded.diagnostics.end(), checked.diagnostics.begin(),
                                  checked.diagnostics.end());
      }
      for (const auto& diagnostic : loaded.diagnostics) {
        // A reusable workflow is checked on its own and again through its callers: once is
        // enough.
        if (!printed.insert(diagnostic.to_string()).second) continue;
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
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "check workflow files; errors as FILE:LINE:COL");
  cmd->add_option("paths", args->paths, "workflow files or directories (default: .)");
  cmd->add_flag("-q,--quiet", args->quiet, "print only the problems");
  cmd->add_option("--config", args->config,
                  "host configuration: custom GPU labels (default: $KILN_CONFIG, else "
                  "/etc/kiln/kiln.yml)");
  cmd->add_option("--label", args->labels,
                  "a runs-on label this host serves: NAME, or NAME=REQUEST (as kiln.yml)")
      ->allow_extra_args(false);
  cmd->add_option("--simulate-gpus", args->simulate_gpus,
                  "check GPU requests against this simulated inventory (default: this host's "
                  "GPUs, when it has some)");
  cmd->add_option("--actions-mirror", args->actions_mirror,
                  "directory of other repositories' actions and reusable workflows, as "
                  "DIR/owner/repo@ref/ (default: $KILN_ACTIONS_MIRROR)");
  cmd->callback([args, &exit_code] { exit_code = validate(*args); });
}

}  // namespace kiln::cli
