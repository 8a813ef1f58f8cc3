// CPU cost of one telemetry sample (src/kiln/gpu/telemetry.h), per GPU: the NVML sampler against
// the fake libnvidia-ml of the unit tests (or a real one: KILN_BENCH_NVML=libnvidia-ml.so.1 on a
// GPU host), and the simulated sampler, which re-reads and re-validates its JSON spec each time.
// Each iteration samples every GPU once, through the sampler's deadline worker as the engine does;
// the "per_gpu" counter is the process CPU time of one GPU's sample (all threads, the worker
// included). BM_ThreadPerCall and BM_DeadlineWorker compare the two ways of keeping a deadline
// on an empty query side by side: a thread started per call (call_with_deadline, what the
// samplers used before) and the worker that stays. docs/performance.md, "GPU telemetry".

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <fmt/format.h>

#include "kiln/gpu/deadline.h"
#include "kiln/gpu/telemetry.h"

namespace {

using namespace std::chrono_literals;

std::string nvml_library() {
  const char* real = std::getenv("KILN_BENCH_NVML");
  return real && *real ? real : KILN_FAKE_NVML;
}

void run(benchmark::State& state, kiln::gpu::GpuSampler& sampler, int gpus) {
  std::vector<int> indices(static_cast<std::size_t>(gpus));
  std::iota(indices.begin(), indices.end(), 0);
  for (auto _ : state) {
    auto samples = sampler.sample(indices, 10s);
    if (!samples) {
      state.SkipWithError(samples.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(samples);
  }
  state.counters["per_gpu"] =
      benchmark::Counter(static_cast<double>(gpus), benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}

// Arg: GPUs per sample (the fake library has 4; a real host as many as it has).
void BM_NvmlSample(benchmark::State& state) {
  auto sampler = kiln::gpu::make_nvml_sampler(nvml_library());
  run(state, *sampler, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_NvmlSample)->Arg(1)->Arg(4)->MeasureProcessCPUTime();

void BM_SimulatedSample(benchmark::State& state) {
  int gpus = static_cast<int>(state.range(0));
  auto spec = std::filesystem::temp_directory_path() / fmt::format("kiln-bench-{}.json", getpid());
  {
    std::ofstream out(spec);
    out << R"({"gpus": [)";
    for (int i = 0; i < gpus; ++i)
      out << (i ? "," : "") << R"({"vendor": "nvidia", "model": "NVIDIA H200", "memory_mib": 143771,
                 "arch": "sm_90", "telemetry": {"utilization_pct": 90, "power_w": 650,
                 "energy_mj": 1000, "temperature_c": 60, "sm_clock_mhz": 1980}})";
    out << "]}";
  }
  auto sampler = kiln::gpu::make_simulated_sampler(spec);
  run(state, *sampler, gpus);
  std::filesystem::remove(spec);
}
BENCHMARK(BM_SimulatedSample)->Arg(1)->Arg(8)->MeasureProcessCPUTime();

void BM_ThreadPerCall(benchmark::State& state) {
  for (auto _ : state) {
    auto r = kiln::gpu::call_with_deadline<int>([] { return kiln::Result<int>(1); }, 10s, "empty");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ThreadPerCall)->MeasureProcessCPUTime();

void BM_DeadlineWorker(benchmark::State& state) {
  kiln::gpu::DeadlineWorker worker;
  for (auto _ : state) {
    auto r = worker.call<int>([] { return kiln::Result<int>(1); }, 10s, "empty");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_DeadlineWorker)->MeasureProcessCPUTime();

}  // namespace
