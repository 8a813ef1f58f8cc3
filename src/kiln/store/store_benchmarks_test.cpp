// Benchmark results in the SQLite store: round trip, series filters, limits, run links.

#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

BenchmarkResult result(std::string benchmark, double value, TimeMs time) {
  BenchmarkResult r;
  r.repository = "acme/kernels";
  r.benchmark = std::move(benchmark);
  r.metric = "real_time";
  r.unit = "ns";
  r.direction = "smaller_is_better";
  r.branch = "main";
  r.testbed = "gpu=NVIDIA H200 x1; labels=gpu";
  r.commit_sha = "c0ffee";
  r.time = time;
  r.source = "bench.json";
  r.format = "google-benchmark";
  r.value = value;
  return r;
}

class BenchmarkStoreTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto opened = try_open_store();
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
  }
  std::unique_ptr<Store> store_;
};

TEST_P(BenchmarkStoreTest, RoundTripKeepsEveryField) {
  auto r = result("BM_Copy/1024", 101.25, 1'700'000'000'000);
  r.samples = {100.5, 101.25, 0.1 + 0.2};
  r.extra = {{"threshold", 10}};
  auto ids = store_->add_benchmark_results(std::span(&r, 1));
  ASSERT_TRUE(ids) << ids.error().to_string();
  ASSERT_EQ(ids->size(), 1u);
  auto listed = store_->list_benchmark_results({});
  ASSERT_TRUE(listed) << listed.error().to_string();
  ASSERT_EQ(listed->size(), 1u);
  const auto& back = listed->front();
  EXPECT_EQ(back.id, ids->front());
  EXPECT_EQ(back.repository, "acme/kernels");
  EXPECT_EQ(back.benchmark, "BM_Copy/1024");
  EXPECT_EQ(back.metric, "real_time");
  EXPECT_EQ(back.unit, "ns");
  EXPECT_EQ(back.direction, "smaller_is_better");
  EXPECT_EQ(back.branch, "main");
  EXPECT_EQ(back.testbed, r.testbed);
  EXPECT_EQ(back.commit_sha, "c0ffee");
  EXPECT_EQ(back.time, 1'700'000'000'000);
  EXPECT_EQ(back.source, "bench.json");
  EXPECT_EQ(back.format, "google-benchmark");
  EXPECT_DOUBLE_EQ(back.value, 101.25);
  // Samples survive bit for bit (JSON keeps the shortest round-tripping form).
  EXPECT_EQ(back.samples, r.samples);
  EXPECT_EQ(back.extra["threshold"], 10);
  EXPECT_FALSE(back.run_id);
}

TEST_P(BenchmarkStoreTest, SeriesAreSeparatedByBranchTestbedAndMetric) {
  std::vector<BenchmarkResult> rows;
  rows.push_back(result("BM_A", 1, 1000));
  rows.push_back(result("BM_A", 2, 2000));
  rows.back().branch = "feature";
  rows.push_back(result("BM_A", 3, 3000));
  rows.back().testbed = "gpu=AMD Instinct MI250X x1";
  rows.push_back(result("BM_A", 4, 4000));
  rows.back().metric = "cpu_time";
  rows.push_back(result("BM_B", 5, 5000));
  ASSERT_TRUE(store_->add_benchmark_results(rows));

  BenchmarkQuery query;
  query.repository = "acme/kernels";
  query.benchmark = "BM_A";
  query.metric = "real_time";
  query.branch = "main";
  query.testbed = "gpu=NVIDIA H200 x1; labels=gpu";
  auto series = store_->list_benchmark_results(query);
  ASSERT_TRUE(series);
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ(series->front().value, 1);

  query.branch = "";
  query.testbed = "";
  series = store_->list_benchmark_results(query);
  ASSERT_TRUE(series);
  EXPECT_EQ(series->size(), 3u);
}

TEST_P(BenchmarkStoreTest, LimitKeepsTheNewestInTimeOrder) {
  std::vector<BenchmarkResult> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(result("BM_A", i, 1000 * (10 - i)));  // newest first
  ASSERT_TRUE(store_->add_benchmark_results(rows));
  BenchmarkQuery query;
  query.limit = 3;
  auto newest = store_->list_benchmark_results(query);
  ASSERT_TRUE(newest);
  ASSERT_EQ(newest->size(), 3u);
  // Times 8000, 9000, 10000 are values 2, 1, 0, oldest first.
  EXPECT_EQ(newest->at(0).value, 2);
  EXPECT_EQ(newest->at(1).value, 1);
  EXPECT_EQ(newest->at(2).value, 0);
}

TEST_P(BenchmarkStoreTest, RunFiltersSelectAndExcludeARun) {
  store::Run run;
  run.repository = "acme/kernels";
  run.workflow_path = "ci.yml";
  run.workflow_name = "CI";
  run.event = "push";
  run.ref = "refs/heads/main";
  run.sha = "c0ffee";
  auto created = store_->create_run(run);
  ASSERT_TRUE(created);
  std::vector<BenchmarkResult> rows = {result("BM_A", 1, 1000), result("BM_A", 2, 2000)};
  rows[1].run_id = created->id;
  ASSERT_TRUE(store_->add_benchmark_results(rows));

  BenchmarkQuery query;
  query.run_id = created->id;
  auto of_run = store_->list_benchmark_results(query);
  ASSERT_TRUE(of_run);
  ASSERT_EQ(of_run->size(), 1u);
  EXPECT_EQ(of_run->front().value, 2);

  query = {};
  query.exclude_run_id = created->id;
  auto others = store_->list_benchmark_results(query);
  ASSERT_TRUE(others);
  ASSERT_EQ(others->size(), 1u);
  EXPECT_EQ(others->front().value, 1);
}

TEST_P(BenchmarkStoreTest, CommitPrefixSelectsACommit) {
  std::vector<BenchmarkResult> rows = {result("BM_A", 1, 1000), result("BM_A", 2, 2000)};
  rows[0].commit_sha = "0123abcd";
  rows[1].commit_sha = "0199ffff";
  ASSERT_TRUE(store_->add_benchmark_results(rows));
  BenchmarkQuery query;
  query.commit = "0123";
  auto found = store_->list_benchmark_results(query);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().value, 1);
  query.commit = "01";
  EXPECT_EQ(store_->list_benchmark_results(query)->size(), 2u);
  query.commit = "01%";
  auto bad = store_->list_benchmark_results(query);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_input);
}

TEST_P(BenchmarkStoreTest, BadRowsAreRejectedAndNothingIsWritten) {
  std::vector<BenchmarkResult> rows = {result("BM_A", 1, 1000), result("BM_B", 2, 2000)};
  rows[1].direction = "sideways";
  auto added = store_->add_benchmark_results(rows);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::invalid_input);
  EXPECT_NE(added.error().message.find("sideways"), std::string::npos);

  rows = {result("BM_A", 1, 1000)};
  rows[0].run_id = 4242;  // no such run
  added = store_->add_benchmark_results(rows);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::not_found);

  auto listed = store_->list_benchmark_results({});
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, BenchmarkStoreTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
