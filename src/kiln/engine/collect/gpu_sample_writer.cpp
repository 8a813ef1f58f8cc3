#include "kiln/engine/collect/gpu_sample_writer.h"

#include <algorithm>

namespace kiln::engine {

std::int64_t throttle_bits(const std::vector<std::string>& reasons) {
  std::int64_t bits = 0;
  for (int bit = 0; bit < 32; ++bit) {
    auto names = gpu::clock_event_reason_names(1ULL << bit);
    if (names.empty()) continue;
    if (std::ranges::find(reasons, names.front()) != reasons.end()) bits |= std::int64_t{1} << bit;
  }
  return bits;
}

GpuSampleWriter::GpuSampleWriter(store::Store& store, GpuSampleWriterOptions options)
    : store_(store), options_(std::move(options)) {
  options_.max_rows_per_gpu = std::max<std::size_t>(options_.max_rows_per_gpu, 2);
}

store::GpuSampleRecord GpuSampleWriter::to_record(
    const gpu::GpuSample& s, const std::vector<gpu::GpuProcess>& job_processes) const {
  store::GpuSampleRecord r;
  r.job_id = options_.job_id;
  r.gpu_index = s.index;
  for (const auto& info : options_.gpus)
    if (info.index == s.index) {
      r.gpu_uuid = info.uuid;
      if (info.memory_total_mib > 0)
        r.memory_total_mib = static_cast<std::int64_t>(info.memory_total_mib);
    }
  r.time = s.time_ms;
  r.utilization_pct = s.utilization_pct;
  r.memory_utilization_pct = s.memory_utilization_pct;
  r.memory_used_mib = static_cast<std::int64_t>(s.memory_used_mib);
  r.temperature_c = s.temperature_c;
  r.power_w = s.power_w;
  if (s.energy_mj) r.energy_mj = static_cast<std::int64_t>(*s.energy_mj);
  if (s.sm_clock_mhz) r.sm_clock_mhz = *s.sm_clock_mhz;
  if (s.memory_clock_mhz) r.memory_clock_mhz = *s.memory_clock_mhz;
  r.throttle_reasons = throttle_bits(s.throttle_reasons);
  for (const auto& p : job_processes)
    r.processes.push_back({{"pid", p.pid}, {"used_mib", p.used_mib}});
  return r;
}

Status GpuSampleWriter::add(const gpu::GpuSample& sample,
                            const std::vector<gpu::GpuProcess>& job_processes) {
  PerGpu& gpu = gpus_[sample.index];
  auto record = to_record(sample, job_processes);
  // The window keeps its sample with the most memory, the later one on a tie.
  if (!gpu.best || record.memory_used_mib >= gpu.best->memory_used_mib)
    gpu.best = std::move(record);
  if (++gpu.in_window < gpu.stride) return {};
  gpu.in_window = 0;
  auto best = std::move(*gpu.best);
  gpu.best.reset();
  push(gpu, std::move(best));
  if (gpu.stored.size() + gpu.pending >= options_.max_rows_per_gpu) KILN_TRY_VOID(thin(gpu));
  if (!pending_.empty() &&
      sample.time_ms - pending_.front().time >= options_.flush_interval.count())
    return write_pending();
  return {};
}

void GpuSampleWriter::push(PerGpu& gpu, store::GpuSampleRecord record) {
  ++gpu.pending;
  pending_.push_back(std::move(record));
}

Status GpuSampleWriter::write_pending() {
  if (pending_.empty()) return {};
  std::vector<store::GpuSampleRecord> batch;
  batch.swap(pending_);
  for (auto& [index, gpu] : gpus_) gpu.pending = 0;
  KILN_TRY(auto ids, store_.add_gpu_samples(batch));
  for (std::size_t i = 0; i < batch.size() && i < ids.size(); ++i)
    gpus_[batch[i].gpu_index].stored.emplace_back(ids[i], batch[i].memory_used_mib);
  return {};
}

Status GpuSampleWriter::thin(PerGpu& gpu) {
  KILN_TRY_VOID(write_pending());  // the rows need their ids
  std::vector<std::pair<std::int64_t, std::int64_t>> kept;
  std::vector<std::int64_t> dropped;
  for (std::size_t i = 0; i < gpu.stored.size(); i += 2) {
    if (i + 1 == gpu.stored.size()) {
      kept.push_back(gpu.stored[i]);
      break;
    }
    const auto& a = gpu.stored[i];
    const auto& b = gpu.stored[i + 1];
    bool keep_b = b.second > a.second;
    kept.push_back(keep_b ? b : a);
    dropped.push_back(keep_b ? a.first : b.first);
  }
  KILN_TRY_VOID(store_.delete_gpu_samples(dropped));
  gpu.stored = std::move(kept);
  gpu.stride *= 2;
  return {};
}

Status GpuSampleWriter::flush() {
  for (auto& [index, gpu] : gpus_) {
    if (!gpu.best) continue;
    gpu.in_window = 0;
    auto best = std::move(*gpu.best);
    gpu.best.reset();
    push(gpu, std::move(best));
  }
  return write_pending();
}

std::size_t GpuSampleWriter::rows(int gpu_index) const {
  auto it = gpus_.find(gpu_index);
  if (it == gpus_.end()) return 0;
  return it->second.stored.size() + it->second.pending;
}

}  // namespace kiln::engine
