#include "kiln/engine/record/run_recorder.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store.h"

namespace kiln::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class StoreRunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kiln-recorder-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
    recorder_ = std::make_unique<StoreRunRecorder>(
        *store_, clock_, [this](const std::string& text) { reports_.push_back(text); });
  }
  void TearDown() override {
    recorder_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::int64_t queued_job(const std::string& key, nlohmann::json graph) {
    store::Run run;
    run.repository = "owner/repo";
    run.workflow_path = "ci.yml";
    run.workflow_name = "ci";
    run.event = "push";
    run.status = store::RunStatus::running;
    auto created = recorder_->create_run(run);
    EXPECT_TRUE(created) << created.error().to_string();
    store::Job job;
    job.run_id = created ? created->id : 0;
    job.key = key;
    job.workflow_job_id = key;
    job.name = key;
    job.status = store::JobStatus::queued;
    job.labels = nlohmann::json::array();
    job.extra["graph"] = std::move(graph);
    return recorder_->create_job(job);
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  SystemClock clock_;
  std::vector<std::string> reports_;
  std::unique_ptr<StoreRunRecorder> recorder_;
};

// The re-run of failed jobs once replaced a reused job's `extra` wholesale, and its graph edges
// (written when the job was queued) were gone from the dashboard's graph.
TEST_F(StoreRunRecorderTest, ExtrasAreMergedIntoTheRowNotReplaced) {
  const nlohmann::json graph = {{"node", "test"}, {"needs", {"build"}}};
  auto id = queued_job("test", graph);
  ASSERT_NE(id, 0);
  store::Job earlier;
  earlier.id = 5;
  earlier.run_id = 3;
  earlier.outputs = {{"v", "1"}};
  recorder_->reuse_job(id, earlier);
  recorder_->set_job_extra(id, JobExtra::gpus, nlohmann::json::array({0}));
  recorder_->finish_job(id, {.conclusion = store::Conclusion::success, .message = "reused"});
  auto row = store_->get_job(id);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->extra["graph"], graph);
  EXPECT_EQ(row->extra["reused_from"], (nlohmann::json{{"run", 3}, {"job", 5}}));
  EXPECT_EQ(row->extra["gpus"], nlohmann::json::array({0}));
  EXPECT_EQ(row->outputs["v"], "1");
  EXPECT_EQ(row->status, store::JobStatus::success);
  EXPECT_THAT(reports_, IsEmpty());
}

TEST_F(StoreRunRecorderTest, AFailedWriteIsReportedOnceAndCounted) {
  recorder_->finish_job(4711, {.conclusion = store::Conclusion::failure});
  recorder_->set_job_extra(4712, JobExtra::tests, {});
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_THAT(reports_[0], HasSubstr("cannot write a job's result to the store"));
  EXPECT_EQ(recorder_->failed_writes(), 2);
}

}  // namespace
}  // namespace kiln::engine
