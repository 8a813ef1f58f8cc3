#pragma once
// Quarantined tests (docs/failures.md "Quarantined tests"): the flip rule that quarantines a test
// automatically, and what a failed step's JUnit files say about its failure. A quarantined test
// still runs and is reported; a step that failed only because quarantined tests failed does not
// fail its job (the job runner decides that from what is below: job_steps.cpp).
//
// The rule for a failed step: it exited with a code from 1 to 127 (not a signal, not a timeout
// or a cancel), the JUnit result files written or changed while it ran (a file kiln saw before
// the step, unchanged, does not count) hold at least one failed or errored case, and every such
// case is a test quarantined when the job started. Anything else leaves the step failed.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/run_as.h"
#include "kiln/store/store.h"

namespace kiln::engine {

// A test's name in quarantine, reports and `kiln tests`: "classname::name", or the name alone.
std::string test_name(std::string_view classname, std::string_view name);

// The flips among one test's results (oldest first): on each commit, a result whose outcome
// (failed or errored, against passed) differs from the commit's previous result in another run.
// Skipped results and results of one run (matrix jobs) do not flip. `evidence` names the last.
struct FlipCount {
  int flips = 0;
  std::string evidence;  // "commit 1a2b3c4d: failed in run 3, passed in run 4"
};
FlipCount count_flips(std::span<const store::TestCase> results);

// After a job's test cases are stored: every test of `job_cases` that failed, or passed after
// failing on this commit, and is not in quarantine now, is judged by the flip rule over its last
// policy.runs results since its last quarantine ended; one that flipped policy.flips times is
// quarantined until now + policy.expires. Returns (kind, text) lines for the job's log.
std::vector<std::pair<std::string, std::string>> apply_flip_rule(
    store::Store& store, const std::string& repository, std::span<const store::TestCase> job_cases,
    const store::TestQuarantinePolicy& policy, store::TimeMs now);

// The names of the tests of `repository` in quarantine at `now`.
std::set<std::string> quarantined_tests(store::Store& store, const std::string& repository,
                                        store::TimeMs now);

// A JUnit file as the step rule compares it before and after a step.
struct FileStamp {
  std::int64_t mtime_ns = 0;
  std::uintmax_t size = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};
using FileStamps = std::map<std::filesystem::path, FileStamp>;

// The job's result files (test_results.h: the workspace's default files and the paths listed in
// `list`), as they are now.
FileStamps stamp_result_files(const std::filesystem::path& list,
                              const std::filesystem::path& workspace);

// The failed and errored cases ("classname::name") of the result files that are new or changed
// against `before`, and the warnings of files that could not be read.
struct StepTestFailures {
  std::vector<std::string> failed;
  std::vector<std::string> notes;
  int files = 0;  // changed files read
};
StepTestFailures failures_since(const FileStamps& before, const std::filesystem::path& list,
                                const std::filesystem::path& workspace,
                                const core::RunAs* run_as = nullptr);

// The failed tests of a step excuse it only when there is one and each is quarantined.
bool only_quarantined(const std::vector<std::string>& failed,
                      const std::set<std::string>& quarantined);

}  // namespace kiln::engine
