// Quarantined tests: flip counting (per commit, across runs only), the flip rule against a real
// SQLite store (a threshold, no second quarantine while one is in force, only results after the
// last one ended), and the step rule's files (only those a step wrote or changed count).

#include "kiln/engine/collect/quarantine.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "kiln/store/sqlite_store.h"

namespace kiln::engine {
namespace {

store::TestCase result(std::string commit, std::int64_t run, std::string status) {
  store::TestCase c;
  c.commit_sha = std::move(commit);
  c.run_id = run;
  c.classname = "c";
  c.name = "t";
  c.status = std::move(status);
  return c;
}

TEST(CountFlips, CountsChangesOfOutcomeOnOneCommitAcrossRuns) {
  std::vector<store::TestCase> results = {result("aaaa", 1, "failed"), result("aaaa", 2, "passed"),
                                          result("bbbb", 3, "failed"), result("aaaa", 4, "error"),
                                          result("bbbb", 5, "failed")};
  auto count = count_flips(results);
  EXPECT_EQ(count.flips, 2);  // aaaa: failed -> passed -> error; bbbb never passed
  EXPECT_EQ(count.evidence, "commit aaaa: passed in run 2, failed in run 4");
}

TEST(CountFlips, NewCommitsSkipsAndOneRunsMatrixJobsDoNotFlip) {
  // Failing on one commit and passing on the next is a fix, not a flip.
  EXPECT_EQ(count_flips(std::vector{result("a", 1, "failed"), result("b", 2, "passed")}).flips, 0);
  // A skip is no outcome.
  EXPECT_EQ(count_flips(std::vector{result("a", 1, "failed"), result("a", 2, "skipped"),
                                    result("a", 3, "failed")})
                .flips,
            0);
  // Two jobs of one run (a matrix) that disagree: the configuration differs, not the luck.
  EXPECT_EQ(count_flips(std::vector{result("a", 1, "failed"), result("a", 1, "passed")}).flips, 0);
  EXPECT_EQ(count_flips(std::vector<store::TestCase>{}).flips, 0);
}

TEST(OnlyQuarantined, NeedsAFailureAndEveryFailureQuarantined) {
  std::set<std::string> quarantined = {"c::flaky", "other"};
  EXPECT_TRUE(only_quarantined({"c::flaky"}, quarantined));
  EXPECT_TRUE(only_quarantined({"c::flaky", "other"}, quarantined));
  EXPECT_FALSE(only_quarantined({"c::flaky", "c::broken"}, quarantined));
  EXPECT_FALSE(only_quarantined({}, quarantined)) << "a step failure with no failed test";
}

class QuarantineStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-quar-XXXXXX").string();
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
  // A run of acme/k at `sha` whose one job's test c::t had `status`, stored at `time`; returns
  // the job's case as collect_test_results hands it on.
  store::TestCase run(const std::string& sha, const std::string& status, store::TimeMs time) {
    store::Run r;
    r.repository = "acme/k";
    r.workflow_path = "ci.yml";
    r.workflow_name = "CI";
    r.event = "push";
    r.ref = "refs/heads/main";
    r.sha = sha;
    auto created = store_->create_run(r);
    EXPECT_TRUE(created);
    store::Job job;
    job.run_id = created->id;
    job.key = job.workflow_job_id = job.name = "test";
    auto job_row = store_->create_job(job);
    EXPECT_TRUE(job_row);
    store::TestCase c = result(sha, created->id, status);
    c.job_id = *job_row;
    c.repository = "acme/k";
    c.time = time;
    if (status == "passed") {
      store::TestCaseQuery before;
      before.repository = "acme/k";
      before.commit = sha;
      before.failed_only = true;
      c.flaky = !store_->list_test_cases(before)->empty();
    }
    EXPECT_TRUE(store_->add_test_cases(std::vector{c}));
    return c;
  }
  std::vector<std::pair<std::string, std::string>> judge(const store::TestCase& c,
                                                         store::TimeMs now) {
    return apply_flip_rule(*store_, "acme/k", std::vector{c}, policy_, now);
  }
  std::filesystem::path dir_, workspace_;
  std::unique_ptr<store::Store> store_;
  store::TestQuarantinePolicy policy_{.flips = 2, .runs = 10, .expires = 1000};
};

TEST_F(QuarantineStoreTest, TheFlipRuleQuarantinesAtTheThresholdUntilItExpires) {
  EXPECT_TRUE(judge(run("aaaa", "failed", 10), 11).empty());
  EXPECT_TRUE(judge(run("aaaa", "passed", 20), 21).empty()) << "one flip of two";
  EXPECT_TRUE(quarantined_tests(*store_, "acme/k", 22).empty());
  auto lines = judge(run("aaaa", "failed", 30), 31);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].first, "warning");
  EXPECT_NE(lines[0].second.find("Test c::t is quarantined until"), std::string::npos);
  EXPECT_NE(lines[0].second.find("flipped 2 times in its last 3 results"), std::string::npos);
  auto records = store_->list_test_quarantine("acme/k");
  ASSERT_EQ(records->size(), 1u);
  EXPECT_FALSE((*records)[0].manual);
  EXPECT_EQ((*records)[0].expires_at, 31 + 1000);
  EXPECT_EQ(quarantined_tests(*store_, "acme/k", 32), std::set<std::string>{"c::t"});
  EXPECT_TRUE(quarantined_tests(*store_, "acme/k", 31 + 1000).empty()) << "expired";

  // In force: no second record. Once it ended, the flips before it are not counted again.
  EXPECT_TRUE(judge(run("aaaa", "passed", 40), 41).empty());
  EXPECT_TRUE(judge(run("aaaa", "failed", 2000), 2001).empty()) << "only 0 flips since it ended";
  EXPECT_TRUE(judge(run("aaaa", "passed", 2010), 2011).empty()) << "1 flip since";
  EXPECT_EQ(judge(run("aaaa", "failed", 2020), 2021).size(), 1u) << "2 flips since: again";
}

TEST_F(QuarantineStoreTest, NoFlipRuleWithFlipsZeroAndNoneForStableTests) {
  policy_.flips = 0;
  run("aaaa", "failed", 10);
  run("aaaa", "passed", 20);
  EXPECT_TRUE(judge(run("aaaa", "failed", 30), 31).empty());
  policy_.flips = 1;
  EXPECT_TRUE(judge(run("bbbb", "passed", 40), 41).empty()) << "a pass never failed: not judged";
  EXPECT_TRUE(store_->list_test_quarantine("acme/k")->empty());
}

TEST_F(QuarantineStoreTest, OnlyResultFilesTheStepWroteOrChangedCount) {
  auto write = [&](const std::string& relative, const std::string& text) {
    std::filesystem::create_directories((workspace_ / relative).parent_path());
    std::ofstream(workspace_ / relative) << text;
  };
  const std::string fails =
      "<testsuite><testcase classname=\"c\" name=\"flaky\"><failure/></testcase>"
      "<testcase name=\"ok\"/></testsuite>";
  write("old/junit.xml", fails);
  auto list = dir_ / "list.txt";
  std::ofstream{list};
  auto before = stamp_result_files(list, workspace_);
  EXPECT_EQ(before.size(), 1u);
  auto nothing = failures_since(before, list, workspace_);
  EXPECT_TRUE(nothing.failed.empty()) << "an earlier step's file, unchanged, is not this step's";
  EXPECT_EQ(nothing.files, 0);

  write("new/junit.xml",
        "<testsuite><testcase name=\"solo\"><error message=\"x\"/></testcase></testsuite>");
  write("listed.xml", fails);
  std::ofstream(list) << "listed.xml\n";
  auto changed = failures_since(before, list, workspace_);
  EXPECT_EQ(changed.files, 2);
  EXPECT_EQ(changed.failed, (std::vector<std::string>{"c::flaky", "solo"}));

  write("bad/junit.xml", "<testsuite><testcase");
  auto broken = failures_since(before, list, workspace_);
  ASSERT_EQ(broken.notes.size(), 1u) << "a file it cannot read is named";
  EXPECT_NE(broken.notes[0].find("bad/junit.xml"), std::string::npos);
}

}  // namespace
}  // namespace kiln::engine
