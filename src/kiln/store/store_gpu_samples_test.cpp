// GPU samples in the SQLite store: round trip of every field, unknown readings as nullopt,
// order by GPU then time, all-or-nothing batches, deletion by id.

#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

class GpuSampleStoreTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto opened = try_open_store();
    ASSERT_TRUE(opened) << opened.error().to_string();
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
    store::Job job;
    job.run_id = run_id_;
    job.key = "train";
    job.workflow_job_id = "train";
    job.name = "train";
    auto job_id = store_->create_job(job);
    ASSERT_TRUE(job_id);
    job_id_ = *job_id;
  }
  GpuSampleRecord sample(int gpu, TimeMs time, std::int64_t mem) {
    GpuSampleRecord s;
    s.job_id = job_id_;
    s.gpu_index = gpu;
    s.gpu_uuid = "GPU-" + std::to_string(gpu);
    s.time = time;
    s.memory_used_mib = mem;
    return s;
  }
  std::unique_ptr<Store> store_;
  std::int64_t run_id_ = 0;
  std::int64_t job_id_ = 0;
};

TEST_P(GpuSampleStoreTest, RoundTripKeepsEveryField) {
  auto s = sample(1, 1'700'000'000'123, 40960);
  s.utilization_pct = 87.5;
  s.memory_utilization_pct = 31;
  s.memory_total_mib = 143771;
  s.temperature_c = 64;
  s.power_w = 512.25;
  s.energy_mj = 123456789012;
  s.sm_clock_mhz = 1980;
  s.memory_clock_mhz = 2619;
  s.throttle_reasons = 0x4 | 0x20;
  s.processes = nlohmann::json::parse(R"([{"pid": 42, "used_mib": 40000}])");
  auto ids = store_->add_gpu_samples(std::vector{s});
  ASSERT_TRUE(ids) << ids.error().to_string();
  ASSERT_EQ(ids->size(), 1u);
  auto rows = store_->list_gpu_samples(job_id_);
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 1u);
  s.id = (*ids)[0];
  const auto& r = (*rows)[0];
  EXPECT_EQ(r.id, s.id);
  EXPECT_EQ(r.job_id, job_id_);
  EXPECT_EQ(r.gpu_index, 1);
  EXPECT_EQ(r.gpu_uuid, "GPU-1");
  EXPECT_EQ(r.time, s.time);
  EXPECT_EQ(r.utilization_pct, 87.5);
  EXPECT_EQ(r.memory_utilization_pct, 31.0);
  EXPECT_EQ(r.memory_used_mib, 40960);
  EXPECT_EQ(r.memory_total_mib, 143771);
  EXPECT_EQ(r.temperature_c, 64.0);
  EXPECT_EQ(r.power_w, 512.25);
  EXPECT_EQ(r.energy_mj, 123456789012);
  EXPECT_EQ(r.sm_clock_mhz, 1980);
  EXPECT_EQ(r.memory_clock_mhz, 2619);
  EXPECT_EQ(r.throttle_reasons, 0x24);
  EXPECT_EQ(r.processes, s.processes);
}

TEST_P(GpuSampleStoreTest, UnknownReadingsStayUnknown) {
  auto s = sample(0, 1000, 5);
  s.power_w = std::numeric_limits<double>::quiet_NaN();  // not a reading
  ASSERT_TRUE(store_->add_gpu_samples(std::vector{s}));
  auto rows = store_->list_gpu_samples(job_id_);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_FALSE((*rows)[0].utilization_pct);
  EXPECT_FALSE((*rows)[0].power_w);
  EXPECT_FALSE((*rows)[0].energy_mj);
  EXPECT_FALSE((*rows)[0].memory_total_mib);
  EXPECT_EQ((*rows)[0].processes, nlohmann::json::array());
}

TEST_P(GpuSampleStoreTest, ListsByGpuThenTime) {
  ASSERT_TRUE(store_->add_gpu_samples(
      std::vector{sample(1, 2000, 1), sample(0, 3000, 2), sample(1, 1000, 3), sample(0, 1000, 4)}));
  auto rows = store_->list_gpu_samples(job_id_);
  ASSERT_TRUE(rows);
  std::vector<std::pair<int, TimeMs>> order;
  for (const auto& r : *rows) order.emplace_back(r.gpu_index, r.time);
  EXPECT_EQ(order,
            (std::vector<std::pair<int, TimeMs>>{{0, 1000}, {0, 3000}, {1, 1000}, {1, 2000}}));
}

TEST_P(GpuSampleStoreTest, AnUnknownJobStoresNothingOfTheBatch) {
  auto bad = sample(0, 2000, 1);
  bad.job_id = 999;
  auto added = store_->add_gpu_samples(std::vector{sample(0, 1000, 1), bad});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::not_found);
  EXPECT_TRUE(store_->list_gpu_samples(job_id_)->empty());
}

TEST_P(GpuSampleStoreTest, DeletesById) {
  auto ids = store_->add_gpu_samples(
      std::vector{sample(0, 1000, 1), sample(0, 2000, 2), sample(0, 3000, 3)});
  ASSERT_TRUE(ids);
  ASSERT_TRUE(store_->delete_gpu_samples(std::vector{(*ids)[1]}));
  auto rows = store_->list_gpu_samples(job_id_);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].time, 1000);
  EXPECT_EQ((*rows)[1].time, 3000);
  // A reader in another connection sees the rows (they were committed).
  auto other = try_open_store();
  ASSERT_TRUE(other);
  EXPECT_EQ((*other)->list_gpu_samples(job_id_)->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuSampleStoreTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
