// kiln metrics [--simulate-gpus SPEC] [--store PATH]
// Prometheus text exposition of this host (docs/reports.md): each GPU under dcgm-exporter's
// names and labels (memory from the inventory, live readings from the provider's telemetry
// sampler at scrape time), and kiln_* metrics of runs, jobs, GPU leases and quarantine. A scraper
// can run it from a textfile collector or an exec exporter; `kiln serve` serves the same text on
// GET /metrics (engine/collect/host_metrics.h gathers it for both).
// Exit codes: 0; 2 for a bad spec; 1 when a driver does not answer in time; 3 otherwise.
#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/engine/collect/host_metrics.h"
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

int run_metrics(const MetricsArgs& args) {
  engine::RunOptions options;
  if (!args.simulate.empty()) options.simulate_gpus = args.simulate;
  if (!args.sysfs_root.empty()) options.gpu_sysfs_root = args.sysfs_root;
  if (auto applied = apply_host_config(args.config, options); !applied)
    return report_error(applied.error());
  options.gpu_health.provider_deadline = std::chrono::milliseconds(args.deadline_ms);
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  auto metrics = engine::gather_host_metrics(options, **store);
  if (!metrics) return report_error(metrics.error());
  fmt::print("{}", report::render_prometheus(metrics->gpus, metrics->kiln));
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
