// What a job's check run says: conclusion, title, summary, annotations in the API's shape.

#include "kiln/server/check_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

engine::JobSummary failed_job() {
  engine::JobSummary job;
  job.key = "test";
  job.conclusion = store::Conclusion::failure;
  job.duration = std::chrono::milliseconds(12'345);
  job.failure = engine::StepFailure{.step_index = 2,
                                    .step = "Run tests",
                                    .kind = "exit code",
                                    .exit_code = 3,
                                    .last_lines = {"FAILED test_matmul", "a ``` fence inside"}};
  return job;
}

TEST(CheckOutput, AFailedStepGivesItsExitCodeAndLastLines) {
  auto out = check_output(failed_job());
  EXPECT_EQ(out.conclusion, "failure");
  EXPECT_EQ(out.title, "step 'Run tests' exited with 3");
  EXPECT_THAT(out.summary, HasSubstr("**failure** in 12.3s"));
  EXPECT_THAT(out.summary, HasSubstr("Last lines of step 'Run tests':"));
  // A fence longer than the backticks in the lines, so they cannot end the block.
  EXPECT_THAT(out.summary, HasSubstr("````\nFAILED test_matmul\na ``` fence inside\n````"));
}

TEST(CheckOutput, AnnotationsWithAFileAreTheChecksAnnotationsTheOthersAreListed) {
  auto job = failed_job();
  job.annotations.push_back({.level = exec::AnnotationLevel::error,
                             .message = "expected 4, got 5",
                             .title = "assert",
                             .file = "tests/test_mm.py",
                             .line = 12,
                             .column = 5,
                             .end_column = 9});
  job.annotations.push_back({.level = exec::AnnotationLevel::warning,
                             .message = "slow",
                             .file = "src/mm.cu",
                             .line = 3,
                             .end_line = 7,
                             .column = 2});
  job.annotations.push_back({.level = exec::AnnotationLevel::notice, .message = "no file here"});
  auto out = check_output(job);
  ASSERT_EQ(out.annotations.size(), 2u);
  EXPECT_EQ(out.annotations[0]["path"], "tests/test_mm.py");
  EXPECT_EQ(out.annotations[0]["start_line"], 12);
  EXPECT_EQ(out.annotations[0]["end_line"], 12);
  EXPECT_EQ(out.annotations[0]["annotation_level"], "failure");
  EXPECT_EQ(out.annotations[0]["title"], "assert");
  EXPECT_EQ(out.annotations[0]["start_column"], 5);
  EXPECT_EQ(out.annotations[0]["end_column"], 9);
  EXPECT_EQ(out.annotations[1]["annotation_level"], "warning");
  EXPECT_EQ(out.annotations[1]["end_line"], 7);
  // The API takes columns only within one line.
  EXPECT_FALSE(out.annotations[1].contains("start_column"));
  EXPECT_THAT(out.summary, HasSubstr("### Annotations\n\n- **notice**: no file here"));
  EXPECT_THAT(out.summary, Not(HasSubstr("expected 4, got 5")));
}

TEST(CheckOutput, SuccessTimeoutCancelledAndSkipped) {
  engine::JobSummary job;
  job.conclusion = store::Conclusion::success;
  job.duration = std::chrono::milliseconds(2'000);
  EXPECT_EQ(check_output(job).conclusion, "success");
  EXPECT_EQ(check_output(job).title, "succeeded in 2.0s");
  job.conclusion = store::Conclusion::failure;
  job.failure = engine::StepFailure{.step = "bench", .kind = "timeout"};
  EXPECT_EQ(check_output(job).conclusion, "timed_out");
  EXPECT_EQ(check_output(job).title, "step 'bench': timeout");
  job.conclusion = store::Conclusion::cancelled;
  EXPECT_EQ(check_output(job).conclusion, "cancelled");
  job = {};
  job.conclusion = store::Conclusion::skipped;
  job.reason = "needs build, which failed";
  EXPECT_EQ(check_output(job).title, "skipped: needs build, which failed");
}

TEST(CheckOutput, ThePerfGatesRowsAreATable) {
  auto job = failed_job();
  job.failure = engine::StepFailure{.kind = "gate"};
  job.perf = {{"passed", false},
              {"rows",
               {{{"benchmark", "matmul|4096"},
                 {"metric", "time"},
                 {"change_percent", 11.04},
                 {"threshold_percent", 5.0},
                 {"verdict", "regression"},
                 {"reason", "significant and ≥ threshold"}}}}};
  auto out = check_output(job);
  EXPECT_EQ(out.title, "the perf gate failed the job");
  EXPECT_THAT(out.summary,
              HasSubstr("| matmul\\|4096 | time | +11.0% | +5.0% | regression: significant and ≥ "
                        "threshold |"));
}

TEST(CheckOutput, TheJobSummaryIsTheTextCutAtACharacterBoundary) {
  auto job = failed_job();
  job.step_summary = "## Results\n" + std::string(70'000, 'x');
  auto out = check_output(job);
  EXPECT_LE(out.text.size(), k_check_text_limit);
  EXPECT_THAT(out.text, HasSubstr("## Results"));
  EXPECT_THAT(out.text, HasSubstr("(cut: longer than a check run shows)"));
  // "é" is two bytes: a cut between them would leave invalid UTF-8.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "é";
  auto cut = cut_for_check(accents, 101);
  EXPECT_LE(cut.size(), 101u);
  const auto note = cut.find("\n\n(cut");
  ASSERT_NE(note, std::string::npos);
  EXPECT_EQ(note % 2, 0u) << cut;
}

TEST(CheckOutput, FailedTestsAreTabledAndAnnotatedOnTheirLines) {
  auto job = failed_job();
  job.tests = {{"total", 60}, {"passed", 57}, {"failed", 2},
               {"errors", 1}, {"skipped", 0}, {"quarantined", 1}};
  job.test_failures.push_back({.name = "MathTest::Fails",
                               .message = "math_test.cc:9",
                               .details = "math_test.cc:9\nExpected equality",
                               .file = "tests/math_test.cc",
                               .line = 9});
  job.test_failures.push_back({.name = "py::a|b",
                               .message = "boom",
                               .details = "",
                               .file = "",
                               .line = 0,
                               .quarantined = true});
  auto out = check_output(job);
  EXPECT_THAT(out.summary, HasSubstr("### Tests\n\n60 tests: 57 passed, 2 failed, 1 errors, 0 "
                                     "skipped (1 of the failures quarantined)"));
  EXPECT_THAT(out.summary,
              HasSubstr("| MathTest::Fails | math_test.cc:9 | tests/math_test.cc:9 |"));
  EXPECT_THAT(out.summary, HasSubstr("| py::a\\|b (quarantined) | boom |  |"));
  EXPECT_THAT(out.summary, HasSubstr("(the first 2 of 3 failed tests)"));
  ASSERT_EQ(out.annotations.size(), 1u);  // the one whose file is known
  EXPECT_EQ(out.annotations[0]["path"], "tests/math_test.cc");
  EXPECT_EQ(out.annotations[0]["start_line"], 9);
  EXPECT_EQ(out.annotations[0]["annotation_level"], "failure");
  EXPECT_EQ(out.annotations[0]["title"], "MathTest::Fails");
  EXPECT_EQ(out.annotations[0]["message"], "math_test.cc:9\n\nmath_test.cc:9\nExpected equality");
}

TEST(CheckOutput, NoTestResultsNoTestsSection) {
  EXPECT_THAT(check_output(failed_job()).summary, Not(HasSubstr("### Tests")));
}

}  // namespace
}  // namespace kiln::server
