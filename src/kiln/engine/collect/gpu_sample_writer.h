#pragma once
// Writes a job's GPU samples to the store while the job runs (issue 5, docs/gpus.md
// "Telemetry"), so that reports and `kiln serve` chart them and a kill -9 of kiln loses at most
// the last flush interval.
//
// Batching: samples are committed together once the oldest pending one is `flush_interval` old
// (by the samples' own clock) and at flush(); one commit per batch, never one per sample. Once
// thinning started, a window's row is pending only when the window is complete, so a kill -9
// then also loses the window under way.
//
// Retention: at most `max_rows_per_gpu` rows per GPU per job. When a GPU's rows reach it, every
// pair of consecutive rows (oldest first) keeps only the one with more memory used (the earlier
// one on a tie) and from then on one row is written per window of twice as many samples as
// before, again the window's sample with the most memory (the later one on a tie). So a long job
// keeps evenly thinned rows over its whole time, and the peak memory of every window survives.
// The job's summary does not depend on it (gpu::GpuSummaryAccumulator sees every sample).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/store/store.h"

namespace kiln::engine {

struct GpuSampleWriterOptions {
  std::int64_t job_id = 0;         // the job's store row
  std::vector<gpu::GpuInfo> gpus;  // the granted GPUs: their UUID and total memory
  std::chrono::milliseconds flush_interval{5000};
  std::size_t max_rows_per_gpu = 3600;  // one hour at the default 1 s, then thinned; at least 2
};

// NVML's clock-event reason bits (gpu/telemetry.h names, lowest bit first) of a sample's reasons.
std::int64_t throttle_bits(const std::vector<std::string>& reasons);

class GpuSampleWriter {
 public:
  GpuSampleWriter(store::Store& store, GpuSampleWriterOptions options);

  // Takes one sample of one GPU; `job_processes` are the job's own processes on it. Writes a
  // batch when one is due; the store's error, if that write failed (the samples are dropped).
  Status add(const gpu::GpuSample& sample, const std::vector<gpu::GpuProcess>& job_processes);
  // Writes what is pending, a partly filled window included (the job's last readings).
  Status flush();

  // Rows of a GPU written or pending (for tests and the docs' numbers).
  std::size_t rows(int gpu_index) const;

 private:
  struct PerGpu {
    std::size_t stride = 1;  // samples per row
    std::size_t in_window = 0;
    std::optional<store::GpuSampleRecord> best;  // of the window under way
    // The GPU's stored rows in time order: id and memory, what thinning needs.
    std::vector<std::pair<std::int64_t, std::int64_t>> stored;
    std::size_t pending = 0;  // rows of pending_ of this GPU
  };
  store::GpuSampleRecord to_record(const gpu::GpuSample& sample,
                                   const std::vector<gpu::GpuProcess>& job_processes) const;
  void push(PerGpu& gpu, store::GpuSampleRecord record);
  Status write_pending();
  Status thin(PerGpu& gpu);

  store::Store& store_;
  GpuSampleWriterOptions options_;
  std::map<int, PerGpu> gpus_;
  std::vector<store::GpuSampleRecord> pending_;
};

}  // namespace kiln::engine
