// The engine's test-results hook against a real SQLite store: default paths and listed paths,
// a malformed file as a warning, totals for the job row, and flaky marking across two runs of
// one commit.

#include "kiln/engine/collect/test_results.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "kiln/store/sqlite_store.h"

namespace kiln::engine {
namespace {

class TestResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-tests-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    workspace_ = dir_ / "workspace";
    std::filesystem::create_directories(workspace_);
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened);
    store_ = std::move(*opened);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  TestResultsContext new_run() {
    store::Run run;
    run.repository = dir_.string();
    run.workflow_path = "ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "abc";
    auto created = store_->create_run(run);
    EXPECT_TRUE(created);
    store::Job job;
    job.run_id = created->id;
    job.key = "test";
    job.workflow_job_id = "test";
    job.name = "test";
    auto job_row = store_->create_job(job);
    EXPECT_TRUE(job_row);
    return {.repository = "acme/k", .commit = "abc", .run_id = created->id, .job_id = *job_row};
  }
  void write(const std::filesystem::path& relative, const std::string& text) {
    std::filesystem::create_directories((workspace_ / relative).parent_path());
    std::ofstream(workspace_ / relative) << text;
  }
  static std::string suite(bool flaky_fails) {
    return std::string(
               "<testsuite name=\"s\"><testcase classname=\"c\" name=\"stable\" "
               "time=\"1.5\"/><testcase classname=\"c\" name=\"flaky\" time=\"0.5\">") +
           (flaky_fails ? "<failure message=\"boom\">trace</failure>" : "") +
           "</testcase></testsuite>";
  }
  std::filesystem::path dir_, workspace_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(TestResultsTest, DefaultFilesAreFoundAndOthersAreNot) {
  write("junit.xml", "<testsuite/>");
  write("build/TEST-x.xml", "<testsuite/>");
  write("out/test-results/unit/a.xml", "<testsuite/>");
  write("pom.xml", "<project/>");
  write(".git/junit.xml", "<testsuite/>");
  write("node_modules/pkg/junit.xml", "<testsuite/>");
  auto found = find_default_result_files(workspace_);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], workspace_ / "build/TEST-x.xml");
  EXPECT_EQ(found[1], workspace_ / "junit.xml");
  EXPECT_EQ(found[2], workspace_ / "out/test-results/unit/a.xml");
}

TEST_F(TestResultsTest, StoresCasesWarnsOnBadFilesAndMarksFlakyTests) {
  write("junit.xml", suite(true));
  write("results/other.xml",
        "<testsuites><testsuite name=\"t\"><testcase name=\"listed\"/></testsuite></testsuites>");
  write("junit-broken.xml", "<testsuite><testcase");
  std::ofstream(dir_ / "list.txt") << "results/other.xml\n\njunit.xml\n";  // junit.xml once
  auto first = new_run();
  auto outcome = collect_test_results(*store_, first, dir_ / "list.txt", workspace_);
  ASSERT_FALSE(outcome.totals.is_null());
  EXPECT_EQ(outcome.totals["total"], 3);
  EXPECT_EQ(outcome.totals["passed"], 2);
  EXPECT_EQ(outcome.totals["failed"], 1);
  EXPECT_EQ(outcome.totals["files"], 2);
  EXPECT_DOUBLE_EQ(outcome.totals["seconds"].get<double>(), 2.0);
  bool warned = false;
  for (const auto& [kind, text] : outcome.lines)
    if (kind == "warning" && text.find("junit-broken.xml") != std::string::npos) warned = true;
  EXPECT_TRUE(warned);
  store::TestCaseQuery query;
  query.run_id = first.run_id;
  auto stored = store_->list_test_cases(query);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ(stored->at(0).file, "junit.xml");
  EXPECT_EQ(stored->at(0).repository, "acme/k");
  EXPECT_EQ(stored->at(1).message, "boom");

  // The same commit again: "flaky" passes now, after failing in the first run.
  write("junit.xml", suite(false));
  auto second = new_run();
  outcome = collect_test_results(*store_, second, dir_ / "missing-list.txt", workspace_);
  EXPECT_EQ(outcome.totals["flaky"], 1);
  query.run_id = second.run_id;
  stored = store_->list_test_cases(query);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_FALSE(stored->at(0).flaky);  // "stable" never failed
  EXPECT_TRUE(stored->at(1).flaky);
}

TEST_F(TestResultsTest, FailedTestsAreKeptWithTheirSourceFileAndLine) {
  // gtest names the file as the compiler saw it (absolute here) and the failing line in the
  // message; a relative file= is taken as relative to the workspace; one outside has no file.
  write("junit.xml",
        "<testsuite name=\"MathTest\">"
        "<testcase classname=\"MathTest\" name=\"Fails\" file=\"" +
            (workspace_ / "tests/math_test.cc").string() +
            "\" line=\"8\"><failure message=\"math_test.cc:9&#x0A;Expected equality\">"
            "math_test.cc:9\nExpected equality\n  1\n  2</failure></testcase>"
            "<testcase classname=\"py\" name=\"rel\" file=\"tests/test_x.py\" line=\"4\">"
            "<error message=\"boom\"/></testcase>"
            "<testcase name=\"outside\" file=\"/elsewhere/t.cc\" line=\"2\">"
            "<failure message=\"x\"/></testcase>"
            "<testcase name=\"passes\" file=\"t.cc\" line=\"1\"/>"
            "</testsuite>");
  auto outcome = collect_test_results(*store_, new_run(), dir_ / "none.txt", workspace_);
  ASSERT_EQ(outcome.failures.size(), 3u);
  EXPECT_EQ(outcome.failures[0].name, "MathTest::Fails");
  EXPECT_EQ(outcome.failures[0].message, "math_test.cc:9");
  EXPECT_EQ(outcome.failures[0].file, "tests/math_test.cc");
  EXPECT_EQ(outcome.failures[0].line, 9);  // the assertion's line, not the test's
  EXPECT_EQ(outcome.failures[0].details, "math_test.cc:9\nExpected equality\n  1\n  2");
  EXPECT_EQ(outcome.failures[1].name, "py::rel");
  EXPECT_EQ(outcome.failures[1].file, "tests/test_x.py");
  EXPECT_EQ(outcome.failures[1].line, 4);
  EXPECT_EQ(outcome.failures[2].file, "");
  EXPECT_EQ(outcome.failures[2].line, 0);
}

TEST_F(TestResultsTest, NoFilesNoTotals) {
  auto outcome = collect_test_results(*store_, new_run(), dir_ / "none.txt", workspace_);
  EXPECT_TRUE(outcome.totals.is_null());
  EXPECT_TRUE(outcome.lines.empty());
}

}  // namespace
}  // namespace kiln::engine
