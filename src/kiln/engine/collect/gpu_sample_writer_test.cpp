// The engine's GPU telemetry bookkeeping: the summary folded in as samples come (GPUs
// interleaved, as the engine sees them) equals the summary of the same samples shuffled; the sample
// writer batches by time, keeps its rows per GPU within the cap while the peak memory survives
// thinning, and stores the job's processes and throttle bits.

#include "kiln/engine/collect/gpu_sample_writer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kiln/gpu/telemetry.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;

std::vector<gpu::GpuSample> random_samples(std::mt19937& rng, int gpus, int per_gpu) {
  std::vector<gpu::GpuSample> samples;
  std::uniform_int_distribution<int> step(50, 2000), mem(0, 80000), coin(0, 3);
  std::uniform_real_distribution<double> pct(0, 100), watts(50, 700);
  std::vector<std::int64_t> clock(static_cast<std::size_t>(gpus), 1'700'000'000'000);
  std::vector<std::uint64_t> energy(static_cast<std::size_t>(gpus), 5'000'000);
  for (int i = 0; i < per_gpu; ++i)
    for (int g = 0; g < gpus; ++g) {
      auto k = static_cast<std::size_t>(g);
      gpu::GpuSample s;
      s.index = g;
      clock[k] += step(rng);
      s.time_ms = clock[k];
      s.memory_used_mib = static_cast<std::uint64_t>(mem(rng));
      if (coin(rng) != 0) s.utilization_pct = pct(rng);
      if (coin(rng) != 0) s.power_w = watts(rng);
      if (coin(rng) != 0) s.temperature_c = pct(rng);
      if (g % 2 == 0 && coin(rng) != 0) {
        energy[k] += static_cast<std::uint64_t>(step(rng)) * 300;
        s.energy_mj = energy[k];
      }
      if (coin(rng) == 0) s.throttle_reasons = {"sw_power_cap"};
      if (coin(rng) == 1) s.throttle_reasons = {"gpu_idle"};
      samples.push_back(std::move(s));
    }
  return samples;
}

void expect_same(const std::optional<double>& a, const std::optional<double>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (a) {
    EXPECT_NEAR(*a, *b, 1e-6 * std::max(1.0, std::fabs(*b)));
  }
}

TEST(GpuSummaryAccumulator, StreamingGivesTheSummaryOfTheShuffledSamples) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 200; ++round) {
    int gpus = 1 + round % 4;
    auto samples = random_samples(rng, gpus, round % 17);
    auto held = std::chrono::milliseconds(round * 137);
    gpu::GpuSummaryAccumulator accumulator;
    for (const auto& s : samples) accumulator.add(s);
    auto got = accumulator.finish(gpus, held);
    auto shuffled = samples;
    std::ranges::shuffle(shuffled, rng);
    auto want = gpu::summarize(shuffled, gpus, held);
    SCOPED_TRACE(::testing::Message() << "round " << round);
    EXPECT_EQ(got.gpus, want.gpus);
    EXPECT_EQ(got.samples, want.samples);
    EXPECT_EQ(got.peak_memory_mib, want.peak_memory_mib);
    EXPECT_NEAR(got.mean_memory_mib, want.mean_memory_mib, 1e-6);
    expect_same(got.mean_utilization_pct, want.mean_utilization_pct);
    expect_same(got.energy_wh, want.energy_wh);
    expect_same(got.max_temperature_c, want.max_temperature_c);
    EXPECT_NEAR(got.throttled_seconds, want.throttled_seconds, 1e-6);
    EXPECT_NEAR(got.gpu_seconds_held, want.gpu_seconds_held, 1e-9);
    EXPECT_NEAR(got.gpu_seconds_busy, want.gpu_seconds_busy, 1e-6);
  }
}

TEST(ThrottleBits, NvmlBitOrder) {
  EXPECT_EQ(throttle_bits({}), 0);
  EXPECT_EQ(throttle_bits({"gpu_idle"}), 0x1);
  EXPECT_EQ(throttle_bits({"sw_power_cap", "hw_thermal_slowdown"}), 0x4 | 0x40);
  EXPECT_EQ(throttle_bits({"display_clock_setting", "not_a_reason"}), 0x100);
  EXPECT_EQ(gpu::clock_event_reason_names(
                static_cast<unsigned long long>(throttle_bits({"sync_boost", "hw_slowdown"}))),
            (std::vector<std::string>{"hw_slowdown", "sync_boost"}));
}

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-gpuw-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened);
    store_ = std::move(*opened);
    store::Run run;
    run.repository = dir_.string();
    run.workflow_path = "ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "c0ffee";
    auto created = store_->create_run(run);
    ASSERT_TRUE(created);
    store::Job job;
    job.run_id = created->id;
    job.key = "train";
    job.workflow_job_id = "train";
    job.name = "train";
    auto job_id = store_->create_job(job);
    ASSERT_TRUE(job_id);
    options_.job_id = *job_id;
    gpu::GpuInfo info;
    info.index = 0;
    info.uuid = "GPU-aaaa";
    info.memory_total_mib = 143771;
    options_.gpus = {info};
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::vector<store::GpuSampleRecord> rows() {
    auto listed = store_->list_gpu_samples(options_.job_id);
    EXPECT_TRUE(listed);
    return listed ? *listed : std::vector<store::GpuSampleRecord>{};
  }
  static gpu::GpuSample at(std::int64_t t, std::uint64_t mem) {
    gpu::GpuSample s;
    s.time_ms = t;
    s.memory_used_mib = mem;
    return s;
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  GpuSampleWriterOptions options_;
};

TEST_F(WriterTest, BatchesByTheSamplesClockAndFlushesTheRest) {
  options_.flush_interval = 5000ms;
  GpuSampleWriter writer(*store_, options_);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(writer.add(at(1000 * i, 10), {}));
  EXPECT_TRUE(rows().empty()) << "4 s of samples are still pending";
  ASSERT_TRUE(writer.add(at(5000, 10), {}));
  EXPECT_EQ(rows().size(), 6u) << "the oldest pending sample is 5 s old: one batch";
  ASSERT_TRUE(writer.add(at(6000, 10), {}));
  EXPECT_EQ(rows().size(), 6u);
  ASSERT_TRUE(writer.flush());
  EXPECT_EQ(rows().size(), 7u);
}

TEST_F(WriterTest, StoresIdentityReadingsProcessesAndThrottleBits) {
  GpuSampleWriter writer(*store_, options_);
  auto s = at(1234, 2048);
  s.utilization_pct = 90;
  s.memory_utilization_pct = 40;
  s.power_w = 600;
  s.temperature_c = 70;
  s.energy_mj = 99;
  s.sm_clock_mhz = 1980;
  s.memory_clock_mhz = 2619;
  s.throttle_reasons = {"sw_power_cap"};
  s.processes = {{1, 1024}, {2, 1024}};
  ASSERT_TRUE(writer.add(s, {{2, 1024}}));
  ASSERT_TRUE(writer.flush());
  auto stored = rows();
  ASSERT_EQ(stored.size(), 1u);
  const auto& r = stored[0];
  EXPECT_EQ(r.gpu_uuid, "GPU-aaaa");
  EXPECT_EQ(r.memory_total_mib, 143771);
  EXPECT_EQ(r.time, 1234);
  EXPECT_EQ(r.memory_used_mib, 2048);
  EXPECT_EQ(r.utilization_pct, 90.0);
  EXPECT_EQ(r.memory_utilization_pct, 40.0);
  EXPECT_EQ(r.power_w, 600.0);
  EXPECT_EQ(r.temperature_c, 70.0);
  EXPECT_EQ(r.energy_mj, 99);
  EXPECT_EQ(r.sm_clock_mhz, 1980);
  EXPECT_EQ(r.memory_clock_mhz, 2619);
  EXPECT_EQ(r.throttle_reasons, 0x4);
  EXPECT_EQ(r.processes, nlohmann::json::parse(R"([{"pid": 2, "used_mib": 1024}])"))
      << "only the job's own processes";
}

TEST_F(WriterTest, ThinsToTheCapAndKeepsThePeak) {
  options_.max_rows_per_gpu = 16;
  options_.flush_interval = 3000ms;
  GpuSampleWriter writer(*store_, options_);
  const int n = 1000;
  const int peak_at = 777;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        writer.add(at(1000 * i, i == peak_at ? 99999 : static_cast<std::uint64_t>(i % 50)), {}));
    ASSERT_LE(writer.rows(0), 16u) << "after sample " << i;
  }
  ASSERT_TRUE(writer.flush());
  auto stored = rows();
  EXPECT_EQ(stored.size(), writer.rows(0));
  EXPECT_LE(stored.size(), 16u);
  EXPECT_GE(stored.size(), 8u) << "thinning halves, never empties";
  std::int64_t peak = 0;
  for (const auto& r : stored) peak = std::max(peak, r.memory_used_mib);
  EXPECT_EQ(peak, 99999) << "the peak survives every thinning";
  // The rows still span the job: the first window and the last readings are there.
  EXPECT_LT(stored.front().time, 1000 * 64);
  EXPECT_GT(stored.back().time, 1000 * (n - 64));
  for (std::size_t i = 1; i < stored.size(); ++i) EXPECT_LT(stored[i - 1].time, stored[i].time);
}

}  // namespace
}  // namespace kiln::engine
