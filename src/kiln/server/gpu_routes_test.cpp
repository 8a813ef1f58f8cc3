// GET /api/gpus's document: what the dashboard's GPU page reads (model, memory, telemetry, the
// holder by name, the topology), the holder looked up in a real store only for this process's
// leases, and the newest stored sample of the holder's job.

#include "kiln/server/gpu_routes.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "kiln/store/process_identity.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::server {
namespace {

gpu::Inventory three_gpus() {
  gpu::Inventory inventory;
  inventory.provider = "simulated";
  for (int i = 0; i < 3; ++i) {
    gpu::GpuInfo info;
    info.index = i;
    info.uuid = "GPU-" + std::to_string(i);
    info.vendor = "nvidia";
    info.model = "NVIDIA H100 80GB HBM3";
    info.arch = "sm_90";
    info.memory_total_mib = 81559;
    info.memory_used_mib = i == 0 ? 40000 : 0;
    info.numa_node = 0;
    inventory.gpus.push_back(info);
  }
  inventory.links.push_back({0, 1, gpu::LinkKind::nvlink, 18});
  return inventory;
}

class GpuRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-gpus-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened);
    store_ = std::move(*opened);
    store::Run run;
    run.repository = "acme/kernels";
    run.workflow_path = ".github/workflows/ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "c0ffee";
    auto created = store_->create_run(run);
    ASSERT_TRUE(created);
    run_ = *created;
    store::Job job;
    job.run_id = run_.id;
    job.key = "train (h100)";
    job.workflow_job_id = "train";
    job.name = "train";
    auto id = store_->create_job(job);
    ASSERT_TRUE(id);
    job_id_ = *id;
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  store::GpuLease lease(const store::ProcessIdentity& owner) const {
    store::GpuLease lease;
    lease.gpu_uuid = "GPU-0";
    lease.holder = "17: CI / train (h100) (run 1)";
    lease.job_token = "kiln-abc-" + std::to_string(job_id_);
    lease.run_id = run_.id;
    lease.owner = owner;
    return lease;
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  store::Run run_;
  std::int64_t job_id_ = 0;
};

TEST_F(GpuRoutesTest, TheHolderOfThisProcesssLeaseByName) {
  const auto self = store::current_process();
  auto holder = lease_holder(*store_, lease(self), self);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->repository, "acme/kernels");
  EXPECT_EQ(holder->workflow, "CI");
  EXPECT_EQ(holder->job, "train (h100)");
  EXPECT_EQ(holder->job_id, job_id_);
  EXPECT_EQ(holder->run_id, run_.id);
  EXPECT_EQ(holder->run_number, run_.number);
}

TEST_F(GpuRoutesTest, AnotherProcesssLeaseNamesNoRunOfThisStore) {
  const auto self = store::current_process();
  auto other = self;
  other.pid = self.pid + 1;
  EXPECT_FALSE(lease_holder(*store_, lease(other), self));
  auto elsewhere = self;
  elsewhere.host = self.host + "-other";
  EXPECT_FALSE(lease_holder(*store_, lease(elsewhere), self));
}

TEST_F(GpuRoutesTest, ATokenOfAnotherRunsJobNamesNoJob) {
  const auto self = store::current_process();
  auto mine = lease(self);
  mine.job_token = "kiln-abc-999";
  auto holder = lease_holder(*store_, mine, self);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->job_id, 0);
  EXPECT_EQ(holder->job, "");
  mine.job_token = "not-a-number";
  ASSERT_TRUE(lease_holder(*store_, mine, self));
  EXPECT_EQ(lease_holder(*store_, mine, self)->job_id, 0);
}

TEST_F(GpuRoutesTest, TheNewestStoredSampleOfTheGpu) {
  std::vector<store::GpuSampleRecord> samples(3);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    samples[i].job_id = job_id_;
    samples[i].gpu_index = i == 2 ? 1 : 0;
    samples[i].time = 1000 * static_cast<std::int64_t>(i + 1);
    samples[i].utilization_pct = 10.0 * static_cast<double>(i + 1);
    samples[i].temperature_c = 50.0 + static_cast<double>(i);
  }
  ASSERT_TRUE(store_->add_gpu_samples(samples));
  auto reading = latest_job_reading(*store_, job_id_, 0);
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->source, "job");
  EXPECT_EQ(reading->time, 2000);
  EXPECT_EQ(reading->utilization_pct, 20.0);
  EXPECT_EQ(reading->temperature_c, 51.0);
  EXPECT_FALSE(reading->power_w);
  EXPECT_FALSE(latest_job_reading(*store_, job_id_, 2));
}

TEST_F(GpuRoutesTest, TheDocumentTheGpuPageReads) {
  const auto inventory = three_gpus();
  std::vector<engine::GpuState> states(3);
  states[0] = {engine::GpuState::Kind::leased, "17: CI / train (h100) (run 1)", 5,
               lease(store::current_process())};
  states[2] = {engine::GpuState::Kind::quarantined, "Xid 79", 7, std::nullopt};
  gpu::GpuSample sample;
  sample.index = 0;
  sample.time_ms = 9000;
  sample.utilization_pct = 75;
  sample.temperature_c = 55;
  sample.power_w = 300;
  std::vector<std::optional<GpuReading>> readings{reading_of(sample), std::nullopt, std::nullopt};
  std::vector<std::optional<GpuHolder>> holders{
      GpuHolder{run_.id, 4, "acme/kernels", "CI", job_id_, "train (h100)"}, std::nullopt,
      std::nullopt};
  const auto doc = gpus_json(inventory, states, readings, holders);
  EXPECT_EQ(doc["provider"], "simulated");
  ASSERT_EQ(doc["gpus"].size(), 3u);
  const auto& first = doc["gpus"][0];
  EXPECT_EQ(first["state"], "leased");
  EXPECT_EQ(first["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(first["memory_total_mib"], 81559);
  EXPECT_EQ(first["memory_used_mib"], 40000);
  EXPECT_EQ(first["telemetry"]["source"], "live");
  EXPECT_EQ(first["telemetry"]["utilization_pct"], 75.0);
  EXPECT_EQ(first["telemetry"]["temperature_c"], 55.0);
  EXPECT_TRUE(first["telemetry"]["memory_utilization_pct"].is_null());
  EXPECT_EQ(first["holder"]["repository"], "acme/kernels");
  EXPECT_EQ(first["holder"]["workflow"], "CI");
  EXPECT_EQ(first["holder"]["job"], "train (h100)");
  EXPECT_EQ(first["holder"]["url"], "/ui/runs/" + std::to_string(run_.id));
  EXPECT_TRUE(doc["gpus"][1]["holder"].is_null());
  EXPECT_TRUE(doc["gpus"][1]["telemetry"].is_null());
  EXPECT_EQ(doc["gpus"][2]["state"], "quarantined");
  EXPECT_EQ(doc["gpus"][2]["detail"], "Xid 79");
  EXPECT_EQ(doc["links"].dump(), R"([{"a":0,"b":1,"kind":"nvlink","width":18}])");
  EXPECT_EQ(doc["topology"]["islands"].dump(), "[[0,1],[2]]");
  EXPECT_EQ(doc["topology"]["matrix"].dump(),
            R"([[null,"nvlink","numa"],["nvlink",null,"numa"],["numa","numa",null]])");
}

}  // namespace
}  // namespace kiln::server
