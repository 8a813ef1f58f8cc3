#pragma once
// strategy.matrix → the list of job instances, exactly as GitHub expands it:
// 1. the cartesian product of the matrix's own keys (not include/exclude) in key order, the
//    first key varying slowest (the order GitHub creates the jobs in);
// 2. exclude: drop every combination that matches all keys of an exclude entry (a partial
//    match; values, objects included, are compared deeply);
// 3. include, entry by entry: added to every ORIGINAL combination (from 1-2) whose original
//    keys it does not contradict, setting its other keys (so it may overwrite what an earlier
//    include added, never an original value); an entry that fits no original combination is
//    appended as a combination of its own. A matrix of only `include` yields one job each.
// More than 256 combinations, or none, is an error, as on GitHub. Values arrive evaluated.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::plan {

constexpr size_t k_max_matrix_jobs = 256;

Result<std::vector<nlohmann::ordered_json>> expand_matrix(const nlohmann::ordered_json& matrix);

// The values of a combination as GitHub lists them after a matrix job's name: in key order,
// nested objects and arrays flattened into their values, null and empty strings left out:
// {"os": "linux", "python": 3.11} -> "linux, 3.11".
std::string matrix_values_text(const nlohmann::ordered_json& combination);
// "build" + {"os": "linux", "python": 3.11} -> "build (linux, 3.11)"; the bare name when the
// combination shows no values.
std::string matrix_job_name(std::string_view job_name, const nlohmann::ordered_json& combination);

}  // namespace kiln::plan
