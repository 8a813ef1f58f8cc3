#pragma once
// The numbers of this host's Prometheus exposition (report/metrics.h): its GPUs under
// dcgm-exporter's names, and the runs, jobs, GPU leases and quarantine of the store. Gathered
// here once for `kiln metrics` and `kiln serve`'s GET /metrics, which add nothing but their own
// families (the server's queue) before report::render_prometheus writes the text.

#include <vector>

#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/report/metrics.h"

namespace kiln::store {
class Store;
}

namespace kiln::engine {

struct HostMetrics {
  std::vector<report::GpuMetrics> gpus;
  report::KilnMetrics kiln;
};

// GPUs come from the options' provider (the host, --simulate-gpus, --sysfs-root) with their
// states from the host store (leases, quarantine); runs and jobs from `store`. Errors: a GPU
// provider that fails or does not answer within options.gpu_health.provider_deadline, the store.
Result<HostMetrics> gather_host_metrics(const RunOptions& options, store::Store& store);

}  // namespace kiln::engine
