#pragma once
// The engine's side of test results (docs/reports.md): after a job's steps end, the JUnit XML
// files its steps wrote are read (report/junit.h) and stored per test case with the run's
// repository and commit. Files: the workspace's default result files (**/junit*.xml,
// **/TEST-*.xml, **/test-results/**/*.xml) and the paths a step appended to $KILN_TEST_RESULTS.
// A passed test that failed in another run of the same commit is marked flaky. A file that
// cannot be parsed is a warning naming it; test results read here never change the job's
// conclusion (the step that ran the tests did that already, and quarantine.h judged it).

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/run_as.h"
#include "kiln/engine/engine.h"
#include "kiln/store/store.h"

namespace kiln::engine {

struct TestResultsContext {
  std::string repository;  // as Run::repository
  std::string commit;
  std::int64_t run_id = 0;
  std::int64_t job_id = 0;
};

struct TestResultsOutcome {
  // (kind, text) lines for the job's log: "kiln" or "warning".
  std::vector<std::pair<std::string, std::string>> lines;
  // {"total", "passed", "failed", "errors", "skipped", "flaky", "seconds", "files"} for the
  // job row's extra["tests"]; null when no result file was found.
  nlohmann::json totals;
  // The test cases read (as stored), for the flip rule (quarantine.h).
  std::vector<store::TestCase> cases;
  // The first k_max_job_test_failures failed or errored tests, for the job's check run.
  std::vector<TestFailure> failures;
};

// Reads, stores and summarizes. `list` is the $KILN_TEST_RESULTS file (one path a line,
// relative ones relative to `workspace`); a missing list is no list.
// With `run_as` (jobs.user), a file is read only when that user could read it.
TestResultsOutcome collect_test_results(store::Store& store, const TestResultsContext& context,
                                        const std::filesystem::path& list,
                                        const std::filesystem::path& workspace,
                                        const core::RunAs* run_as = nullptr);

// The files a job's results are read from: the workspace's default result files, then the paths
// listed in `list` (relative ones relative to `workspace`) that are not among them.
std::vector<std::filesystem::path> result_files(const std::filesystem::path& list,
                                                const std::filesystem::path& workspace);

// The workspace's default result files, sorted; directories named .git or node_modules are
// not entered, and at most `limit` files are returned.
std::vector<std::filesystem::path> find_default_result_files(const std::filesystem::path& workspace,
                                                             std::size_t limit = 1000);

}  // namespace kiln::engine
