#pragma once
// Internal to the workflow loader: one reader per part of a workflow file. Each reports its
// problems into the Reader and returns what it could read, so that loading goes on after an
// error.

#include <optional>
#include <vector>

#include "kiln/workflow/model.h"
#include "kiln/workflow/yaml_reader.h"

namespace kiln::workflow::detail {

// on: a string, a list or a mapping of events.
std::vector<Trigger> read_triggers(Reader& reader, const Entry& on);

// jobs: every job in file order; then needs are resolved and cycles named.
std::vector<Job> read_jobs(Reader& reader, const Entry& jobs);

// steps of a job (or of a composite action, whose `owner` names it in messages): each step
// with the keys `keys` (empty: a job step's keys), ids unique and valid, one of `run`, `uses`
// or (job steps) GitHub's parallel-step keys; `parallel:` groups are flattened (model.h StepKind).
std::vector<Step> read_steps(Reader& reader, const Entry& entry, const std::string& owner,
                             std::span<const std::string_view> keys = {});

// concurrency (workflow and job level): a group name, or {group, cancel-in-progress}.
std::optional<Concurrency> read_concurrency(Reader& reader, const Entry& entry);
// defaults: {run: {shell, working-directory}}.
RunDefaults read_defaults(Reader& reader, const Entry& entry);
// permissions: accepted, not used yet: read-all / write-all / {} or a mapping of scopes.
void read_permissions(Reader& reader, const Entry& entry);
// strategy.matrix as JSON with GitHub's scalar types (numbers and booleans stay typed).
std::optional<nlohmann::ordered_json> read_matrix(Reader& reader, const Entry& entry);

}  // namespace kiln::workflow::detail
