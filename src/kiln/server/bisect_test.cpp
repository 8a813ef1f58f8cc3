// request_bisections over a real SQLite store: which regressions get a bisection, between which
// commits, on which GPUs, and never twice.

#include "kiln/server/bisect.h"

#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::server {
namespace {

class BisectRequestTest : public store::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto opened = store::open_sqlite_store(db_path());
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  // A run at `sha` on `branch` whose job "bench" published attention = level; returns its id.
  std::int64_t run_at(const std::string& sha, const std::string& branch, double level,
                      const std::string& testbed = "gpus=NVIDIA H200 x1; labels=gpu") {
    store::Run run;
    run.repository = "acme/widgets";
    run.workflow_path = ".github/workflows/bench.yml";
    run.workflow_name = "bench";
    run.event = "push";
    run.ref = "refs/heads/" + branch;
    run.sha = sha;
    auto created = store_->create_run(run);
    EXPECT_TRUE(created);
    store::Job job;
    job.run_id = created->id;
    job.key = "bench";
    job.workflow_job_id = "bench";
    job.name = "bench";
    job.extra = {
        {"gpus", {{{"index", 1}, {"uuid", "GPU-1"}, {"model", "NVIDIA H200"}, {"driver", "550"}}}}};
    auto job_id = store_->create_job(job);
    EXPECT_TRUE(job_id);
    last_job_ = *job_id;
    store::BenchmarkResult result;
    result.repository = "acme/widgets";
    result.benchmark = "attention";
    result.metric = "value";
    result.unit = "ms";
    result.direction = "smaller_is_better";
    result.branch = branch;
    result.testbed = testbed;
    result.commit_sha = sha;
    result.run_id = created->id;
    result.value = level;
    EXPECT_TRUE(store_->add_benchmark_results(std::vector{result}));
    return created->id;
  }
  // The engine's report of run `run_id` with one row of the given verdict.
  engine::RunReport report(std::int64_t run_id, const std::string& verdict) {
    engine::JobSummary job;
    job.key = "bench";
    job.job_id = "bench";
    job.store_id = last_job_;
    job.perf = {{"rows",
                 {{{"benchmark", "attention"},
                   {"metric", "value"},
                   {"threshold_percent", 5.0},
                   {"verdict", verdict}}}}};
    engine::WorkflowRunSummary run;
    run.run_id = run_id;
    run.jobs.push_back(job);
    engine::RunReport out;
    out.runs.push_back(run);
    return out;
  }
  store::Trigger trigger() {
    store::Trigger t;
    t.repository = "acme/widgets";
    t.event = "push";
    t.ref = "refs/heads/main";
    return t;
  }

  std::unique_ptr<store::Store> store_;
  std::int64_t last_job_ = 0;
};

TEST_F(BisectRequestTest, ARegressionGetsOneBisectionFromTheLastGoodRun) {
  run_at("aaa1", "main", 100);
  run_at("aaa2", "feature", 100);        // another branch: not the baseline while main has one
  run_at("aaa3", "kiln-bisect/9", 100);  // a bisection's own run: never a last good run
  const auto bad = run_at("bbb1", "main", 120);
  auto ids = request_bisections(*store_, trigger(), report(bad, "regression"));
  ASSERT_EQ(ids.size(), 1u);
  auto stored = store_->get_trigger(ids[0]);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->event, "bisect");
  EXPECT_EQ(stored->sha, "bbb1");
  EXPECT_EQ(stored->status, store::TriggerStatus::queued);
  auto request = parse_bisect_request(stored->payload);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->good, "aaa1");
  EXPECT_EQ(request->bad, "bbb1");
  EXPECT_EQ(request->run, bad);
  EXPECT_EQ(request->job, "bench");
  EXPECT_EQ(request->workflow, ".github/workflows/bench.yml");
  EXPECT_DOUBLE_EQ(request->threshold, 0.025);
  EXPECT_EQ(request->pin.uuids, std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(request->pin.models, std::vector<std::string>{"NVIDIA H200"});
  EXPECT_EQ(request->pin.driver, "550");
  // The regressed run says so.
  auto run = store_->get_run(bad);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->extra["bisect"]["status"], "queued");
  EXPECT_EQ(run->extra["bisect"]["trigger"], ids[0]);
  // The same regression again (a re-run, another replica): no second bisection.
  EXPECT_TRUE(request_bisections(*store_, trigger(), report(bad, "regression")).empty());
}

TEST_F(BisectRequestTest, OnlyRegressionsAndOnlyWithAnEarlierResult) {
  const auto first = run_at("aaa1", "main", 100);
  EXPECT_TRUE(request_bisections(*store_, trigger(), report(first, "regression")).empty());
  const auto second = run_at("aaa2", "main", 100);
  for (const char* verdict : {"unchanged", "improvement", "too-noisy", "no-baseline"})
    EXPECT_TRUE(request_bisections(*store_, trigger(), report(second, verdict)).empty()) << verdict;
  // Another testbed's history is not this one's.
  const auto other = run_at("ccc1", "main", 120, "gpus=NVIDIA A100 x1; labels=gpu");
  EXPECT_TRUE(request_bisections(*store_, trigger(), report(other, "regression")).empty());
}

TEST_F(BisectRequestTest, APullRequestBisectsFromTheNewestOtherBranchResult) {
  run_at("aaa1", "main", 100);
  const auto bad = run_at("ddd1", "topic", 120);
  auto ids = request_bisections(*store_, trigger(), report(bad, "regression"));
  ASSERT_EQ(ids.size(), 1u);
  auto request = parse_bisect_request(store_->get_trigger(ids[0])->payload);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->good, "aaa1");
}

TEST(BisectPayload, MissingFieldsAreRefused) {
  EXPECT_FALSE(parse_bisect_request(nlohmann::json::object()));
  EXPECT_FALSE(parse_bisect_request({{"run", 3}, {"job", "bench"}}));
  BisectRequest r;
  r.run = 3;
  r.job = "bench";
  r.workflow_job = "bench";
  r.benchmark = "attention";
  r.good = "a";
  r.bad = "b";
  r.pin.models = {"H200"};
  auto back = parse_bisect_request(to_payload(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pin.models, r.pin.models);
  EXPECT_DOUBLE_EQ(back->threshold, r.threshold);
}

}  // namespace
}  // namespace kiln::server
