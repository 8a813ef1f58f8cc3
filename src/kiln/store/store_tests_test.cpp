// Test cases in the store (SQLite, PostgreSQL): round trip, filters, failed-only history, bad
// rows; quarantined tests: replace, release, expiry.

#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

class TestCaseStoreTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto opened = try_open_store();
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
  }
  // A run of acme/kernels at `sha` with one job; returns (run id, job id).
  std::pair<std::int64_t, std::int64_t> run_with_job(const std::string& sha) {
    store::Run run;
    run.repository = "acme/kernels";
    run.workflow_path = "ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = sha;
    auto created = store_->create_run(run);
    EXPECT_TRUE(created);
    store::Job job;
    job.run_id = created->id;
    job.key = "test";
    job.workflow_job_id = "test";
    job.name = "test";
    auto job_id = store_->create_job(job);
    EXPECT_TRUE(job_id);
    return {created->id, *job_id};
  }
  TestCase test_case(std::pair<std::int64_t, std::int64_t> ids, std::string name,
                     std::string status, TimeMs time) {
    TestCase c;
    c.run_id = ids.first;
    c.job_id = ids.second;
    c.repository = "acme/kernels";
    c.commit_sha = "c0ffee";
    c.suite = "pytest";
    c.classname = "tests.test_io";
    c.name = std::move(name);
    c.status = std::move(status);
    c.seconds = 0.25;
    c.time = time;
    return c;
  }
  std::unique_ptr<Store> store_;
};

TEST_P(TestCaseStoreTest, RoundTripKeepsEveryField) {
  auto ids = run_with_job("c0ffee");
  auto c = test_case(ids, "test_read", "failed", 1'700'000'000'000);
  c.message = "assert 1 == 2";
  c.details = "Traceback...\n  line 3";
  c.output = "stdout <b>";
  c.file = "reports/junit.xml";
  c.flaky = true;
  auto added = store_->add_test_cases(std::span(&c, 1));
  ASSERT_TRUE(added) << added.error().to_string();
  auto listed = store_->list_test_cases({});
  ASSERT_TRUE(listed) << listed.error().to_string();
  ASSERT_EQ(listed->size(), 1u);
  const auto& back = listed->front();
  EXPECT_EQ(back.id, added->front());
  EXPECT_EQ(back.run_id, ids.first);
  EXPECT_EQ(back.job_id, ids.second);
  EXPECT_EQ(back.repository, "acme/kernels");
  EXPECT_EQ(back.commit_sha, "c0ffee");
  EXPECT_EQ(back.suite, "pytest");
  EXPECT_EQ(back.classname, "tests.test_io");
  EXPECT_EQ(back.name, "test_read");
  EXPECT_EQ(back.status, "failed");
  EXPECT_DOUBLE_EQ(back.seconds, 0.25);
  EXPECT_EQ(back.message, "assert 1 == 2");
  EXPECT_EQ(back.details, "Traceback...\n  line 3");
  EXPECT_EQ(back.output, "stdout <b>");
  EXPECT_EQ(back.file, "reports/junit.xml");
  EXPECT_TRUE(back.flaky);
  EXPECT_EQ(back.time, 1'700'000'000'000);
}

TEST_P(TestCaseStoreTest, FiltersSelectRunsTestsAndFailures) {
  auto first = run_with_job("c0ffee");
  auto second = run_with_job("c0ffee");
  std::vector<TestCase> rows = {
      test_case(first, "test_a", "failed", 1000), test_case(first, "test_b", "passed", 1001),
      test_case(second, "test_a", "passed", 2000), test_case(second, "test_c", "error", 2001)};
  ASSERT_TRUE(store_->add_test_cases(rows));

  TestCaseQuery query;
  query.run_id = second.first;
  EXPECT_EQ(store_->list_test_cases(query)->size(), 2u);

  query = {};
  query.job_id = first.second;
  EXPECT_EQ(store_->list_test_cases(query)->size(), 2u);

  // The history of one test across runs, oldest first.
  query = {};
  query.repository = "acme/kernels";
  query.classname = "tests.test_io";
  query.name = "test_a";
  auto history = store_->list_test_cases(query);
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ(history->at(0).status, "failed");
  EXPECT_EQ(history->at(1).status, "passed");

  // What failed at this commit in other runs: the flaky check's question.
  query = {};
  query.repository = "acme/kernels";
  query.commit = "c0ffee";
  query.exclude_run_id = second.first;
  query.failed_only = true;
  auto failed = store_->list_test_cases(query);
  ASSERT_TRUE(failed);
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ(failed->front().name, "test_a");

  query.commit = "deadbeef";
  EXPECT_TRUE(store_->list_test_cases(query)->empty());

  query = {};
  query.limit = 1;
  auto newest = store_->list_test_cases(query);
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ(newest->front().name, "test_c");
}

TEST_P(TestCaseStoreTest, BadRowsAreRejectedAndNothingIsWritten) {
  auto ids = run_with_job("c0ffee");
  std::vector<TestCase> rows = {test_case(ids, "test_a", "passed", 1000),
                                test_case(ids, "test_b", "exploded", 1000)};
  auto added = store_->add_test_cases(rows);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::invalid_input);
  EXPECT_NE(added.error().message.find("exploded"), std::string::npos);

  rows = {test_case({4242, 4242}, "test_a", "passed", 1000)};
  added = store_->add_test_cases(rows);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::not_found);
  EXPECT_TRUE(store_->list_test_cases({})->empty());
}

// A quarantine is replaced by a newer one, released once, and not in force after it expires;
// ended records stay listed (the flip rule counts only the runs after them).
TEST_P(TestCaseStoreTest, QuarantinedTestsAreReplacedReleasedAndExpire) {
  TestQuarantine record;
  record.repository = "acme/kernels";
  record.test = "tests.test_io::test_read";
  record.reason = "flipped 2 times in its last 10 runs";
  record.since = 1000;
  record.expires_at = 5000;
  ASSERT_TRUE(store_->quarantine_test(record));
  record.test = "tests.test_io::test_write";
  record.manual = true;
  record.reason = "known bad";
  ASSERT_TRUE(store_->quarantine_test(record));
  TestQuarantine other = record;
  other.repository = "acme/other";
  ASSERT_TRUE(store_->quarantine_test(other));

  auto listed = store_->list_test_quarantine("acme/kernels");
  ASSERT_TRUE(listed) << listed.error().to_string();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].test, "tests.test_io::test_read");
  EXPECT_FALSE((*listed)[0].manual);
  EXPECT_EQ((*listed)[0].since, 1000);
  EXPECT_EQ((*listed)[0].expires_at, 5000);
  EXPECT_EQ((*listed)[0].released_at, 0);
  EXPECT_TRUE((*listed)[0].active(4999));
  EXPECT_FALSE((*listed)[0].active(5000));
  EXPECT_EQ((*listed)[0].ended(5000), 5000);
  EXPECT_TRUE((*listed)[1].manual);
  EXPECT_EQ((*listed)[1].reason, "known bad");

  EXPECT_EQ(store_->release_test_quarantine("acme/kernels", "tests.test_io::test_write", 2000)
                .value_or(false),
            true);
  EXPECT_EQ(store_->release_test_quarantine("acme/kernels", "tests.test_io::test_write", 2100)
                .value_or(true),
            false);
  EXPECT_EQ(store_->release_test_quarantine("acme/kernels", "tests.test_io::test_read", 6000)
                .value_or(true),
            false)
      << "an expired quarantine is not released again";
  EXPECT_EQ(store_->release_test_quarantine("acme/kernels", "nope", 2000).value_or(true), false);
  listed = store_->list_test_quarantine("acme/kernels");
  ASSERT_TRUE(listed);
  EXPECT_EQ((*listed)[1].released_at, 2000);
  EXPECT_FALSE((*listed)[1].active(2001));
  EXPECT_EQ((*listed)[1].ended(2001), 2000);

  // Quarantined again: in force again, the release forgotten.
  record.since = 3000;
  record.expires_at = 9000;
  ASSERT_TRUE(store_->quarantine_test(record));
  listed = store_->list_test_quarantine("acme/kernels");
  ASSERT_TRUE(listed);
  EXPECT_EQ((*listed)[1].released_at, 0);
  EXPECT_TRUE((*listed)[1].active(3001));
  EXPECT_EQ(store_->list_test_quarantine("acme/other")->size(), 1u);
  EXPECT_FALSE(store_->quarantine_test(TestQuarantine{.repository = "acme/kernels"}));
}

INSTANTIATE_TEST_SUITE_P(Backends, TestCaseStoreTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
