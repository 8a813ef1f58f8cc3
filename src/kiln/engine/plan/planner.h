#pragma once
// Planning: which workflows the event triggers, and how a job becomes instances (one per
// matrix combination) once the contexts it may use (needs outputs) exist.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/gpu/gpu.h"
#include "kiln/gpu/labels.h"
#include "kiln/plan/event.h"
#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/model.h"
#include "kiln/workflow/references.h"

namespace kiln::engine {

struct SelectedWorkflow {
  std::filesystem::path path;  // as shown to the user: relative to the repository
  workflow::Workflow workflow;
  std::string name;  // `name:`, or the path
};

struct Selection {
  std::vector<SelectedWorkflow> triggered;
  // The reusable workflows the triggered ones call (directly or not), by the `uses:` text.
  std::map<std::string, std::shared_ptr<const workflow::CalledWorkflow>> called;
  // Reusable workflows of other repositories that could not be had: `uses:` text → why.
  std::map<std::string, std::string> unresolved;
  std::vector<std::pair<std::string, std::string>> not_triggered;  // (path, reason)
  workflow::Diagnostics diagnostics;  // of every workflow file, errors and warnings
};

// Loads every workflow (all of them, so that errors anywhere are reported) and decides which
// ones the event triggers. With errors in `diagnostics`, nothing should run.
Result<Selection> select_workflows(const RunOptions& options, const RepositoryInfo& repo,
                                   const plan::Event& event);

// One instance of a job: the job itself, or one combination of its matrix.
struct PlannedInstance {
  std::string key;                // "build" or "build (linux, 3.11)"
  std::string name;               // the display name
  nlohmann::ordered_json matrix;  // the combination, or null
  int index = 0;                  // strategy.job-index
  int total = 1;                  // strategy.job-total
};

struct PlannedJob {
  std::vector<PlannedInstance> instances;
  bool fail_fast = true;
  int max_parallel = 0;  // 0: no limit
};

// Expands a job's matrix (evaluating its expressions with `context`, which holds github,
// inputs, vars and needs), names the instances, and applies --matrix filters.
Result<PlannedJob> plan_job(const workflow::Job& job, const expr::Context& context,
                            const std::vector<std::pair<std::string, std::string>>& matrix_filter);

// True when the job's matrix or name refers to `needs`: it can be planned only at run time.
bool plan_needs_results(const workflow::Job& job);

// A boolean setting that may be an expression (fail-fast, continue-on-error,
// cancel-in-progress): YAML's `true`/`false` as written, or a `${{ }}` value's truthiness.
Result<bool> evaluate_flag(const workflow::Text& text, const expr::Context& context);

// Dispatch inputs with the types the workflow declares: boolean inputs become booleans and
// number inputs numbers in the `inputs` context (github.event.inputs keeps the strings).
expr::Value typed_inputs(const workflow::Workflow& workflow,
                         const std::map<std::string, std::string>& values);

// Runner labels and GPU requests that can be checked before anything runs: each job's runs-on
// labels that hold no expression must be served by the host (check_served_labels), custom
// labels are expanded by the host config's map and parsed with the GPU label grammar; a
// malformed one is an error at its label. With an inventory, a request that inventory can never
// satisfy is an error too, at the label that asks (or the container options line).
// Limits are checked too: a literal timeout-minutes must parse (parse_timeout_minutes).
// A job a Slurm pool of `slurm` takes is judged against the pool instead of the inventory: one
// its nodes can never hold (config::SlurmPool::never_placed) is an error at the label that asks.
workflow::Diagnostics check_job_settings(const workflow::Workflow& workflow,
                                         const gpu::GpuLabelMap& custom = {},
                                         const gpu::Inventory* inventory = nullptr,
                                         const config::SlurmConfig* slurm = nullptr);

// timeout-minutes as written or evaluated: a positive number of minutes, at most a year (a larger
// one is a typo, and would overflow the clock).
constexpr double k_max_timeout_minutes = 525'600;
Result<double> parse_timeout_minutes(const std::string& text, const SourceLocation& where);

// A label the host does not serve (gpu::GpuLabelMap::serves) is an error at the label, saying
// how to map it: a GitHub runner never takes a job one of whose labels it lacks.
Status check_served_labels(std::span<const gpu::GpuLabel> labels, const gpu::GpuLabelMap& host);

// A job instance's runs-on labels, expressions evaluated with `context` (matrix, inputs...): a
// label that is exactly one `${{ }}` whose value is an array gives each item as a label
// (`runs-on: ${{ matrix.runner }}` with `runner: [self-hosted, 'gpu:2']`).
Result<std::vector<gpu::GpuLabel>> instance_labels(const workflow::RunsOn& runs_on,
                                                   const expr::Context& context);

// Where a GPU request is blamed: the first GPU-grammar label of the (expanded) labels, else, when
// the labels ask for no GPU and container options exist, the options line, else runs-on.
SourceLocation gpu_request_where(std::span<const gpu::GpuLabel> labels,
                                 const SourceLocation& runs_on, const SourceLocation& options);

// The GPU request of a job from its (expanded) labels, else from its container's options (already
// evaluated): gpu::parse_gpu_request, then container::gpu_request_from_options (options the
// container policy refuses ask for nothing here; check_containers reports them).
Result<gpu::GpuRequest> job_gpu_request(std::span<const gpu::GpuLabel> labels,
                                        const std::optional<std::string>& container_options);

// The roots that `uses:` references of the repository resolve against (references.h).
workflow::ReferenceRoots reference_roots(const RunOptions& options, const RepositoryInfo& repo);

// One error carrying every error diagnostic, one per line (the first is the error's location).
Error diagnostics_error(const workflow::Diagnostics& diagnostics);

// The jobs to run for --job filters: those named and, transitively, the jobs they need.
Result<std::vector<std::string>> jobs_to_run(const workflow::Workflow& workflow,
                                             const std::vector<std::string>& filter);

}  // namespace kiln::engine
