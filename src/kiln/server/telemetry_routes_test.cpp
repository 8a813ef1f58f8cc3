// GET /api/runs/ID/telemetry's document from a real store: the exact shape the dashboard reads
// (jobs, GPUs in index order, samples in time order, null for a missing reading), a job without
// samples, and an unknown run.

#include "kiln/server/telemetry_routes.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "kiln/store/sqlite_store.h"

namespace kiln::server {
namespace {

class TelemetryJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-tel-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened);
    store_ = std::move(*opened);
    store::Run run;
    run.repository = "acme/kernels";
    run.workflow_path = "ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "c0ffee";
    auto created = store_->create_run(run);
    ASSERT_TRUE(created);
    run_id_ = created->id;
    for (const char* key : {"train", "lint"}) {
      store::Job job;
      job.run_id = run_id_;
      job.key = key;
      job.workflow_job_id = key;
      job.name = key;
      auto id = store_->create_job(job);
      ASSERT_TRUE(id);
      jobs_.push_back(*id);
    }
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::int64_t run_id_ = 0;
  std::vector<std::int64_t> jobs_;
};

TEST_F(TelemetryJsonTest, TheDashboardsShape) {
  store::GpuSampleRecord a;
  a.job_id = jobs_[0];
  a.gpu_index = 1;
  a.gpu_uuid = "GPU-b";
  a.time = 2000;
  a.utilization_pct = 90;
  a.memory_utilization_pct = 40;
  a.memory_used_mib = 4096;
  a.memory_total_mib = 143771;
  a.power_w = 600.5;
  a.temperature_c = 70;
  a.throttle_reasons = 4;
  store::GpuSampleRecord b = a;
  b.time = 1000;
  b.utilization_pct.reset();  // not read
  store::GpuSampleRecord c = a;
  c.gpu_index = 0;
  c.gpu_uuid = "GPU-a";
  ASSERT_TRUE(store_->add_gpu_samples(std::vector{a, b, c}));

  auto got = run_telemetry_json(*store_, run_id_);
  ASSERT_TRUE(got) << got.error().message;
  auto want = nlohmann::ordered_json::parse(R"({"jobs": [
    {"job_id": )" + std::to_string(jobs_[0]) +
                                            R"(, "key": "train", "gpus": [
      {"index": 0, "uuid": "GPU-a", "samples": [
        {"t": 2000, "util": 90.0, "mem_util": 40.0, "mem_used_mib": 4096, "mem_total_mib": 143771,
         "power_w": 600.5, "temp_c": 70.0, "throttle": 4}]},
      {"index": 1, "uuid": "GPU-b", "samples": [
        {"t": 1000, "util": null, "mem_util": 40.0, "mem_used_mib": 4096, "mem_total_mib": 143771,
         "power_w": 600.5, "temp_c": 70.0, "throttle": 4},
        {"t": 2000, "util": 90.0, "mem_util": 40.0, "mem_used_mib": 4096, "mem_total_mib": 143771,
         "power_w": 600.5, "temp_c": 70.0, "throttle": 4}]}]},
    {"job_id": )" + std::to_string(jobs_[1]) +
                                            R"(, "key": "lint", "gpus": []}]})");
  EXPECT_EQ(*got, want) << got->dump(2);
}

TEST_F(TelemetryJsonTest, AnUnknownRunIsNotFound) {
  auto got = run_telemetry_json(*store_, run_id_ + 100);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::not_found);
}

}  // namespace
}  // namespace kiln::server
