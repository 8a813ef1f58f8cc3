#pragma once
// SARIF 2.1.0 logs as a job's annotations, and the built-in for the step that hands them over:
// `uses: github/codeql-action/upload-sarif@REF`. On GitHub that step uploads the log to code
// scanning; under Kiln, which has no code-scanning service, it reads the log and makes each
// result an annotation of the job (docs/workflows.md "Built-in actions"): on its file and line
// in the pull request's check run, listed in the log, the report and the dashboard. The same
// path `::error file=...` takes.
//
// What is read: every run's results; the result's level (else its rule's default level, else
// "warning"); its message (text, or the rule's message string by id, with {0}... arguments);
// its first location's file (artifactLocation.uri resolved through uriBaseId and the run's
// originalUriBaseIds, `file://` URIs and %-escapes decoded) made relative to checkout_path,
// and region. Results with an accepted suppression or baselineState "absent" are counted and
// skipped, as code scanning shows none of them.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/exec/actions.h"
#include "kiln/exec/log_sink.h"

namespace kiln::exec {

struct SarifResults {
  std::vector<Annotation> annotations;  // in the log's order
  std::size_t results = 0;              // every result of every run
  std::size_t suppressed = 0;           // skipped: suppressed, or absent from the baseline
  std::size_t outside = 0;              // kept, with no file: their file is not under checkout_path
  std::vector<std::string> tools;       // the runs' tool.driver.name, each once
};

// `log` is a parsed SARIF document read from `origin` (named in errors). Not a SARIF 2.1.0 log
// (no "runs" array, a run or result of the wrong shape) is invalid_input naming origin and the
// place ("runs[0].results[3].locations").
Result<SarifResults> sarif_annotations(const nlohmann::json& log,
                                       const std::filesystem::path& origin,
                                       const std::filesystem::path& checkout_path);

// The built-in step: inputs sarif_file (a file, or a directory whose *.sarif files are read,
// default ../results), checkout_path (default the workspace), category, ref, sha, token,
// matrix and wait-for-processing (accepted, without use here). Output sarif-id.
Result<ActionResult> run_upload_sarif(const std::map<std::string, std::string>& with,
                                      const ActionContext& context);

}  // namespace kiln::exec
