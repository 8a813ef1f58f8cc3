// What storing GPU telemetry costs kiln (docs/performance.md, "GPU telemetry"): the engine's
// sample writer (engine/collect/gpu_sample_writer.h) against a real SQLite store in a temporary
// directory — CPU per sample, the batched commit (one per 5 s of samples) amortized in — and the
// amdgpu per-process scan of /proc (gpu/amd_fdinfo.h), once over the fixture tree and once over
// this host's real /proc (every process's fds are read; on a host without amdgpu nothing matches,
// so it is the walk's cost).

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>

#include "kiln/engine/collect/gpu_sample_writer.h"
#include "kiln/gpu/amd_fdinfo.h"
#include "kiln/store/sqlite_store.h"

namespace {

namespace fs = std::filesystem;

void BM_WriterAdd(benchmark::State& state) {
  std::string pattern = (fs::temp_directory_path() / "kiln-bench-tel-XXXXXX").string();
  if (!mkdtemp(pattern.data())) return state.SkipWithError("mkdtemp");
  fs::path dir = pattern;
  auto store = kiln::store::open_sqlite_store(dir / "kiln.db");
  if (!store) return state.SkipWithError(store.error().message.c_str());
  kiln::store::Run run;
  run.repository = "bench";
  run.workflow_path = "ci.yml";
  run.workflow_name = "CI";
  run.event = "push";
  run.ref = "refs/heads/main";
  run.sha = "c0ffee";
  auto created = (*store)->create_run(run);
  kiln::store::Job job;
  job.run_id = created->id;
  job.key = job.workflow_job_id = job.name = "train";
  auto job_id = (*store)->create_job(job);
  const int gpus = static_cast<int>(state.range(0));
  kiln::engine::GpuSampleWriterOptions options;
  options.job_id = *job_id;
  options.max_rows_per_gpu = 1'000'000;  // no thinning: the cost of writing alone
  for (int g = 0; g < gpus; ++g) {
    kiln::gpu::GpuInfo info;
    info.index = g;
    info.uuid = "GPU-" + std::to_string(g);
    info.memory_total_mib = 143771;
    options.gpus.push_back(info);
  }
  kiln::engine::GpuSampleWriter writer(**store, options);
  std::int64_t t = 1'700'000'000'000;
  kiln::gpu::GpuSample s;
  s.utilization_pct = 80;
  s.memory_utilization_pct = 30;
  s.memory_used_mib = 40960;
  s.temperature_c = 60;
  s.power_w = 500;
  s.energy_mj = 1'000'000;
  s.sm_clock_mhz = 1980;
  s.memory_clock_mhz = 2619;
  s.throttle_reasons = {"gpu_idle"};
  std::vector<kiln::gpu::GpuProcess> processes{{4242, 40000}};
  for (auto _ : state) {
    t += 100;  // 10 Hz: a commit every 50 samples of each GPU
    for (int g = 0; g < gpus; ++g) {
      s.index = g;
      s.time_ms = t;
      if (!writer.add(s, processes)) return state.SkipWithError("store write failed");
    }
  }
  (void)writer.flush();
  state.counters["per_gpu_sample"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * gpus,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  fs::remove_all(dir);
}
BENCHMARK(BM_WriterAdd)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_AmdgpuProcessScanFixture(benchmark::State& state) {
  fs::path root = fs::path(KILN_SOURCE_DIR) / "tests/data/gpu/amd-mi250";
  for (auto _ : state) benchmark::DoNotOptimize(kiln::gpu::read_amdgpu_process_memory(root));
}
BENCHMARK(BM_AmdgpuProcessScanFixture)->Unit(benchmark::kMicrosecond);

void BM_AmdgpuProcessScanHostProc(benchmark::State& state) {
  std::size_t processes = 0;
  for (const auto& entry : fs::directory_iterator("/proc"))
    if (std::isdigit(static_cast<unsigned char>(entry.path().filename().string()[0]))) ++processes;
  for (auto _ : state) benchmark::DoNotOptimize(kiln::gpu::read_amdgpu_process_memory("/"));
  state.counters["processes"] = static_cast<double>(processes);
}
BENCHMARK(BM_AmdgpuProcessScanHostProc)->Unit(benchmark::kMicrosecond);

// What the amdgpu sampler pays per sample between two walks (AmdgpuProcessScanner, rescan 5 s):
// the DRM fds the last walk found are re-read, nothing else.
void BM_AmdgpuProcessScannerBetweenWalks(benchmark::State& state) {
  kiln::gpu::AmdgpuProcessScanner scanner(fs::path(KILN_SOURCE_DIR) / "tests/data/gpu/amd-mi250",
                                          std::chrono::hours(1));
  (void)scanner.read();  // the walk
  for (auto _ : state) benchmark::DoNotOptimize(scanner.read());
}
BENCHMARK(BM_AmdgpuProcessScannerBetweenWalks)->Unit(benchmark::kMicrosecond);

}  // namespace
