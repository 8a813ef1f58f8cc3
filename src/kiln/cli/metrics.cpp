// kiln metrics [--simulate-gpus SPEC] [--store PATH]
// Prometheus text exposition of this host (docs/reports.md): each GPU under dcgm-exporter's
// names and labels (memory from the inventory, live readings from the provider's telemetry
// sampler at scrape time), and kiln_* metrics of runs, jobs, GPU leases and quarantine. A scraper can
// run it from a textfile collector or an exec exporter; `kiln serve` may serve it later.
// Exit codes: 0; 2 for a bad spec; 1 when a driver does not answer in time; 3 otherwise.
#include <unistd.h>

#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/engine/gpu_sample_writer.h"
#include "kiln/engine/gpu_supervisor.h"
#include "kiln/report/metrics.h"

namespace kiln::cli {
namespace {

struct MetricsArgs {
  std::string simulate;
  std::string sysfs_root;
  std::string store;
  std::string directory = ".";
  std::string config;
  int deadline_ms = 10000;
};

std::string hostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
}

void add_sample(report::GpuMetrics& m, const gpu::GpuSample& s, bool nvidia) {
  auto as_double = [](const auto& value) -> std::optional<double> {
    if (!value) return std::nullopt;
    return static_cast<double>(*value);
  };
  m.utilization_percent = s.utilization_pct;
  m.memory_copy_utilization_percent = s.memory_utilization_pct;
  m.temperature_c = s.temperature_c;
  m.power_w = s.power_w;
  m.energy_mj = as_double(s.energy_mj);
  m.sm_clock_mhz = as_double(s.sm_clock_mhz);
  m.memory_clock_mhz = as_double(s.memory_clock_mhz);
  // NVML reports its reasons (none is a reading); amdgpu sysfs has no such file: unknown.
  if (nvidia) m.clock_throttle_reasons = static_cast<double>(engine::throttle_bits(s.throttle_reasons));
  for (const auto& p : s.processes)
    m.process_memory_mib.emplace_back(p.pid, static_cast<double>(p.used_mib));
}

int run_metrics(const MetricsArgs& args) {
  engine::RunOptions options;
  if (!args.simulate.empty()) options.simulate_gpus = args.simulate;
  if (!args.sysfs_root.empty()) options.gpu_sysfs_root = args.sysfs_root;
  if (auto applied = apply_host_config(args.config, options); !applied)
    return report_error(applied.error());
  options.gpu_health.provider_deadline = std::chrono::milliseconds(args.deadline_ms);
  engine::GpuSupervisor supervisor(options);
  auto inventory = supervisor.inventory();
  if (!inventory) return report_error(inventory.error());

  std::vector<report::GpuMetrics> gpus;
  report::KilnMetrics kiln;
  if (!(*inventory)->gpus.empty()) {
    auto states = supervisor.states();  // refreshes the inventory's memory figures
    if (!states) return report_error(states.error());
    kiln.store_read = true;
    const std::string host = hostname();
    for (const auto& g : (*inventory)->gpus) {
      report::GpuMetrics m;
      m.index = g.index;
      m.uuid = g.uuid;
      m.model = g.model;
      m.hostname = host;
      m.device = g.device_nodes.empty()
                     ? fmt::format("{}{}", g.vendor == "amd" ? "card" : "nvidia", g.index)
                     : std::filesystem::path(g.device_nodes.front()).filename().string();
      m.memory_used_mib = static_cast<double>(g.memory_used_mib);
      if (g.memory_total_mib >= g.memory_used_mib)
        m.memory_free_mib = static_cast<double>(g.memory_total_mib - g.memory_used_mib);
      const auto& state = states->at(static_cast<std::size_t>(g.index));
      m.state = std::string(engine::gpu_state_name(state.kind));
      if (state.kind == engine::GpuState::Kind::leased) ++kiln.gpu_leases;
      if (state.kind == engine::GpuState::Kind::quarantined) ++kiln.gpus_quarantined;
      gpus.push_back(std::move(m));
    }
    // Live readings from the provider's telemetry sampler, taken now (what a provider cannot
    // read stays out of the exposition).
    if (auto sampler = supervisor.make_sampler()) {
      std::vector<int> indices;
      for (const auto& g : gpus) indices.push_back(g.index);
      auto samples = sampler->sample(indices, options.gpu_health.provider_deadline);
      if (!samples) return report_error(samples.error());
      for (std::size_t i = 0; i < samples->size() && i < gpus.size(); ++i)
        add_sample(gpus[i], (*samples)[i],
                   (*inventory)->gpus.at(i).vendor == "nvidia");
    }
  } else {
    kiln.store_read = true;
  }

  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  store::RunQuery query;
  query.limit = 0;
  auto runs = (*store)->list_runs(query);
  if (!runs) return report_error(runs.error());
  for (const auto& run : *runs) {
    ++kiln.runs_by_status[std::string(store::to_string(run.status))];
    if (store::is_terminal(run.status)) continue;
    auto jobs = (*store)->list_jobs(run.id);
    if (!jobs) return report_error(jobs.error());
    for (const auto& job : *jobs) ++kiln.jobs_by_status[std::string(store::to_string(job.status))];
  }
  fmt::print("{}", report::render_prometheus(gpus, kiln));
  return 0;
}

}  // namespace

void add_metrics_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MetricsArgs>();
  auto* cmd = app.add_subcommand(
      "metrics", "this host's GPUs, runs and jobs in Prometheus text format (dcgm-exporter names)");
  cmd->add_option("--simulate-gpus", args->simulate,
                  "read a simulated inventory from this JSON file instead of the host");
  cmd->add_option("--sysfs-root", args->sysfs_root,
                  "read the amdgpu sysfs tree under this directory instead of NVML or /sys");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--config", args->config,
                  "host configuration (default: $KILN_CONFIG, else /etc/kiln/kiln.yml)");
  cmd->add_option("--deadline-ms", args->deadline_ms,
                  "give up on a driver that does not answer within this many milliseconds")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_metrics(*args); });
}

}  // namespace kiln::cli
