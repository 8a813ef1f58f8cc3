#pragma once
// Helpers shared by the loader's tests: load a YAML text as "wf.yml" and look at the result.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "kiln/workflow/loader.h"

namespace kiln::workflow::test {

// Every diagnostic as FILE:LINE:COL: error: MESSAGE; also checks that a workflow comes back
// exactly when there is no error.
inline std::vector<std::string> errors_of(std::string_view yaml) {
  LoadResult result = load_workflow_text(yaml, "wf.yml");
  std::vector<std::string> errors;
  for (const Diagnostic& d : result.diagnostics) errors.push_back(d.to_string());
  EXPECT_EQ(result.workflow.has_value(), errors.empty());
  return errors;
}

// The workflow of a text that must load without a diagnostic other than `warnings`.
inline Workflow load_ok(std::string_view yaml, const std::vector<std::string>& warnings = {}) {
  LoadResult result = load_workflow_text(yaml, "wf.yml");
  std::vector<std::string> seen;
  for (const Diagnostic& d : result.diagnostics) seen.push_back(d.to_string());
  EXPECT_EQ(seen, warnings);
  EXPECT_TRUE(result.workflow.has_value());
  return result.workflow.value_or(Workflow{});
}

}  // namespace kiln::workflow::test
