#include "kiln/gpu/telemetry.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(Telemetry, ClockEventReasonsAreNamedAndOnlySlowdownsCountAsThrottling) {
  EXPECT_EQ(clock_event_reason_names(0x1 | 0x4 | 0x40),
            (std::vector<std::string>{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_TRUE(clock_event_reason_names(0).empty());
  EXPECT_TRUE(is_throttling("hw_slowdown"));
  EXPECT_TRUE(is_throttling("sw_power_cap"));
  EXPECT_FALSE(is_throttling("gpu_idle"));
  EXPECT_FALSE(is_throttling("applications_clocks_setting"));
}

TEST(Telemetry, ASampleRoundTripsThroughJson) {
  GpuSample s;
  s.index = 2;
  s.time_ms = 1700000000123;
  s.utilization_pct = 87;
  s.memory_used_mib = 40960;
  s.power_w = 612.5;
  s.energy_mj = 123456789;
  s.sm_clock_mhz = 1980;
  s.throttle_reasons = {"sw_power_cap"};
  s.processes = {{4242, 40000}};
  auto json = sample_to_json(s);
  EXPECT_FALSE(json.contains("temperature_c"));  // unset fields are omitted
  auto back = sample_from_json(json);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(sample_from_json(nlohmann::json{{"index", "x"}}));
}

GpuSample at(int index, std::int64_t ms, std::uint64_t mib, double util, double power,
             std::optional<std::uint64_t> energy = {}) {
  GpuSample s;
  s.index = index;
  s.time_ms = ms;
  s.memory_used_mib = mib;
  s.utilization_pct = util;
  s.power_w = power;
  s.energy_mj = energy;
  return s;
}

TEST(Telemetry, TheSummaryUsesTheEnergyCounterWhenThereIsOne) {
  // One GPU, held 3 s, sampled at 0, 1, 2 s: the counter grew by 1.8 MJ... of millijoules.
  std::vector<GpuSample> samples{at(0, 0, 1000, 100, 500, 0), at(0, 1000, 3000, 50, 500, 1800000),
                                 at(0, 2000, 2000, 0, 500, 3600000)};
  samples[1].temperature_c = 71;
  samples[2].throttle_reasons = {"hw_thermal_slowdown"};
  auto s = summarize(samples, 1, 3000ms);
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(s.peak_memory_mib, 3000u);
  EXPECT_DOUBLE_EQ(s.mean_memory_mib, 2000);
  ASSERT_TRUE(s.mean_utilization_pct);
  EXPECT_DOUBLE_EQ(*s.mean_utilization_pct, 50);
  ASSERT_TRUE(s.energy_wh);
  // 3.6 MJ of mJ = 3600 J between the counter's readings, then 500 W for the last second.
  EXPECT_DOUBLE_EQ(*s.energy_wh, (3600.0 + 500.0) / 3600.0);
  EXPECT_EQ(s.max_temperature_c, 71);
  EXPECT_DOUBLE_EQ(s.throttled_seconds, 1.0);  // the last sample lasts until the end
  EXPECT_DOUBLE_EQ(s.gpu_seconds_held, 3.0);
  EXPECT_DOUBLE_EQ(s.gpu_seconds_busy, 1.5);
}

TEST(Telemetry, WithoutACounterTheSummaryIntegratesPowerOverTwoGpus) {
  std::vector<GpuSample> samples{at(0, 0, 10, 100, 360), at(1, 0, 20, 0, 720),
                                 at(0, 5000, 10, 100, 360), at(1, 5000, 20, 0, 720)};
  auto s = summarize(samples, 2, 10000ms);
  ASSERT_TRUE(s.energy_wh);
  EXPECT_DOUBLE_EQ(*s.energy_wh, (360.0 * 10 + 720.0 * 10) / 3600.0);
  EXPECT_DOUBLE_EQ(s.gpu_seconds_held, 20.0);
  EXPECT_DOUBLE_EQ(s.gpu_seconds_busy, 10.0);  // one GPU busy, one idle
  EXPECT_FALSE(s.max_temperature_c);
  auto json = summary_to_json(s);
  EXPECT_EQ(json["max_temperature_c"], nullptr);
  EXPECT_EQ(json["peak_memory_mib"], 20);
}

TEST(Telemetry, NoSamplesStillCountTheHeldTime) {
  auto s = summarize({}, 2, 1500ms);
  EXPECT_EQ(s.samples, 0);
  EXPECT_DOUBLE_EQ(s.gpu_seconds_held, 3.0);
  EXPECT_FALSE(s.mean_utilization_pct);
  EXPECT_FALSE(s.energy_wh);
}

TEST(NvmlSampler, ReadsEveryMetricAndInitialisesNvmlOnce) {
  unsetenv("FAKE_NVML_INIT_RC");
  unsetenv("FAKE_NVML_HANG_MS");
  void* handle = dlopen(KILN_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  auto init_count = reinterpret_cast<int (*)()>(dlsym(handle, "fake_nvml_init_count"));
  ASSERT_NE(init_count, nullptr);
  auto sampler = make_nvml_sampler(KILN_FAKE_NVML);
  int before = init_count();
  std::optional<std::uint64_t> first_energy;
  for (int round = 0; round < 3; ++round) {
    auto samples = sampler->sample({1, 2, 3}, 5s);
    ASSERT_TRUE(samples) << samples.error().message;
    ASSERT_EQ(samples->size(), 3u);
    const auto& one = (*samples)[0];
    EXPECT_EQ(one.index, 1);
    EXPECT_GT(one.time_ms, 0);
    EXPECT_EQ(one.utilization_pct, 15);
    EXPECT_EQ(one.memory_utilization_pct, 3);
    EXPECT_EQ(one.memory_used_mib, 1024u);
    EXPECT_EQ(one.temperature_c, 41);
    EXPECT_EQ(one.power_w, 301);
    EXPECT_EQ(one.sm_clock_mhz, 1980u);
    EXPECT_EQ(one.memory_clock_mhz, 2619u);
    EXPECT_TRUE(one.throttle_reasons.empty());
    ASSERT_EQ(one.processes.size(), 1u);
    EXPECT_EQ(one.processes[0].pid, getpid());
    EXPECT_EQ(one.processes[0].used_mib, 2048u);
    // The energy counter is slow on real GPUs (4 ms on an H200): read once per 10 s per GPU.
    if (round == 0) {
      ASSERT_TRUE(one.energy_mj);
      first_energy = one.energy_mj;
    } else {
      EXPECT_FALSE(one.energy_mj);
    }
    EXPECT_EQ((*samples)[1].throttle_reasons,
              (std::vector<std::string>{"sw_power_cap", "hw_slowdown"}));
    EXPECT_FALSE((*samples)[2].power_w);  // not supported on GPU 3: unset, not an error
    EXPECT_FALSE((*samples)[2].energy_mj);
  }
  EXPECT_EQ(init_count() - before, 1);  // kept initialised across samples
}

TEST(NvmlSampler, AMissingLibraryIsAnError) {
  auto sampler = make_nvml_sampler("libnvidia-ml-does-not-exist.so.1");
  auto samples = sampler->sample({0}, 5s);
  ASSERT_FALSE(samples);
  EXPECT_EQ(samples.error().code, ErrorCode::unsupported);
}

fs::path fixture(const char* name) { return fs::path(KILN_SOURCE_DIR) / "tests/data/gpu" / name; }

TEST(AmdSysfsSampler, ReadsBusyMemoryClocksTemperatureAndPower) {
  auto sampler = make_amd_sysfs_sampler(fixture("amd-mi250"));
  auto samples = sampler->sample({0, 3}, 5s);
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_EQ(samples->size(), 2u);
  const auto& first = (*samples)[0];  // card1, the first amdgpu card in bus order
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.utilization_pct, 10);
  EXPECT_EQ(first.memory_utilization_pct, 1);
  EXPECT_EQ(first.sm_clock_mhz, 1700u);
  EXPECT_EQ(first.memory_clock_mhz, 1600u);
  EXPECT_EQ(first.temperature_c, 46);
  EXPECT_EQ(first.power_w, 251);
  EXPECT_FALSE(first.energy_mj);
  EXPECT_EQ((*samples)[1].index, 3);
  EXPECT_FALSE(sampler->sample({99}, 5s));
}

TEST(AmdSysfsSampler, FallsBackToInstantaneousPower) {
  auto sampler = make_amd_sysfs_sampler(fixture("amd-w7900"));
  auto samples = sampler->sample({0}, 5s);
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_TRUE((*samples)[0].power_w);      // power1_input only
  EXPECT_EQ(*(*samples)[0].power_w, 250);  // card0: (250 + 0) W
}

class SimulatedSampler : public ::testing::Test {
 protected:
  fs::path spec_ = fs::path(::testing::TempDir()) / fmt::format("telemetry-{}.json", getpid());
  void write(const std::string& text) { std::ofstream(spec_) << text; }
  void TearDown() override { fs::remove(spec_); }
};

TEST_F(SimulatedSampler, ReportsTheSpecsTelemetryAndRereadsIt) {
  write(R"({"gpus": [{"vendor": "nvidia", "model": "H200", "memory_mib": 143771, "arch": "sm_90",
      "memory_used_mib": 100, "telemetry": {"utilization_pct": 90, "power_w": 650,
      "temperature_c": 70, "energy_mj": 5000, "sm_clock_mhz": 1980,
      "throttle_reasons": ["sw_power_cap"]}}]})");
  auto sampler = make_simulated_sampler(spec_);
  auto samples = sampler->sample({0}, 5s);
  ASSERT_TRUE(samples) << samples.error().message;
  const auto& s = (*samples)[0];
  EXPECT_EQ(s.utilization_pct, 90);
  EXPECT_EQ(s.power_w, 650);
  EXPECT_EQ(s.temperature_c, 70);
  EXPECT_EQ(s.energy_mj, 5000u);
  EXPECT_EQ(s.sm_clock_mhz, 1980u);
  EXPECT_EQ(s.memory_used_mib, 100u);
  EXPECT_EQ(s.throttle_reasons, std::vector<std::string>{"sw_power_cap"});

  write(fmt::format(R"({{"gpus": [{{"vendor": "nvidia", "model": "H200", "memory_mib": 143771,
      "processes": [{{"pid": {}, "memory_mib": 50000}}]}}]}})",
                    getpid()));
  samples = sampler->sample({0}, 5s);
  ASSERT_TRUE(samples) << samples.error().message;
  EXPECT_EQ((*samples)[0].memory_used_mib, 50000u);
  ASSERT_EQ((*samples)[0].processes.size(), 1u);
  EXPECT_FALSE((*samples)[0].utilization_pct);
}

TEST_F(SimulatedSampler, BadTelemetryIsAnErrorNamingTheKey) {
  write(R"({"gpus": [{"vendor": "nvidia", "model": "H200", "memory_mib": 1,
      "telemetry": {"throttle_reasons": ["too_hot"]}}]})");
  auto samples = make_simulated_sampler(spec_)->sample({0}, 5s);
  ASSERT_FALSE(samples);
  EXPECT_NE(samples.error().message.find("gpus[0].telemetry.throttle_reasons[0]"),
            std::string::npos)
      << samples.error().message;
  write(R"({"gpus": [{"vendor": "nvidia", "model": "H200", "memory_mib": 1,
      "telemetry": {"utilization_pct": 101}}]})");
  samples = make_simulated_sampler(spec_)->sample({0}, 5s);
  ASSERT_FALSE(samples);
  EXPECT_NE(samples.error().message.find("gpus[0].telemetry.utilization_pct"), std::string::npos);
}

}  // namespace
}  // namespace kiln::gpu
