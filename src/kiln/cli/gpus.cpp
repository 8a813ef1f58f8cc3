// kiln gpus [--json] [--simulate-gpus SPEC.json] [--sysfs-root DIR] [--release GPU]
//           [--cdi-spec FILE [--driver-root DIR]] [--all-hosts]
// The GPUs of this host (or of a simulated inventory), how they are connected, and each one's
// state: free, leased to a job (which), busy outside kiln, or quarantined (why) (docs/gpus.md).
// --release returns a quarantined GPU to service. --all-hosts lists every host's leased and
// quarantined GPUs from a host store a fleet shares (docs/scale-out.md#gpus-across-hosts).
// Exit codes: 0 (also when there are no GPUs), 2 for a bad spec or an unknown GPU, 1 when a
// driver does not answer in time, 3 when it fails otherwise.
#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/container/cdi.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/gpu/discover.h"
#include "kiln/store/host_store.h"

namespace kiln::cli {

namespace {

struct GpusArgs {
  bool json = false;
  std::string simulate;
  std::string sysfs_root;
  int deadline_ms = 10000;
  std::string release;
  std::string config;
  std::string cdi_spec;           // --cdi-spec FILE
  std::string driver_root = "/";  // --driver-root DIR
  bool all_hosts = false;
};

// --cdi-spec: the CDI specification of this host's NVIDIA GPUs (container/cdi.h), for podman on
// a host without nvidia-ctk.
int write_cdi_spec(const GpusArgs& args, const gpu::Inventory& inventory) {
  auto files = container::host_driver_files(args.driver_root);
  auto spec = container::nvidia_cdi_spec(inventory.gpus, *files);
  if (!spec) return report_error(spec.error());
  for (const auto& note : spec->notes) fmt::print(stderr, "kiln: note: {}\n", note);
  std::ofstream out(args.cdi_spec, std::ios::trunc);
  out << spec->document.dump(2) << "\n";
  if (!out)
    return report_error(
        {ErrorCode::io_error, "cannot write the CDI specification", {args.cdi_spec}});
  fmt::print("wrote {}: {} device name(s) of kind nvidia.com/gpu\n", args.cdi_spec,
             spec->document["devices"].size());
  return 0;
}

std::string state_cell(const engine::GpuState& state) {
  if (state.detail.empty()) return std::string(engine::gpu_state_name(state.kind));
  return fmt::format("{}: {}", engine::gpu_state_name(state.kind), state.detail);
}

// A link as nvidia-smi topo -m writes it: NV<width>, XGMI, PIX (one PCIe switch), PHB (a host
// bridge), NODE (within a NUMA node), SYS (across NUMA nodes).
std::string link_cell(const gpu::Inventory& inventory, int a, int b) {
  if (a == b) return "X";
  auto kind = inventory.connection(a, b);
  switch (kind) {
    case gpu::LinkKind::nvlink: {
      const auto* link = inventory.find_link(a, b);
      return link && link->width > 0 ? fmt::format("NV{}", link->width) : "NV";
    }
    case gpu::LinkKind::xgmi:
      return "XGMI";
    case gpu::LinkKind::pcie_switch:
      return "PIX";
    case gpu::LinkKind::pcie_host:
      return "PHB";
    case gpu::LinkKind::numa:
      return "NODE";
    case gpu::LinkKind::sys:
      return "SYS";
  }
  return "SYS";
}

void print_table(const gpu::Inventory& inventory, const std::vector<engine::GpuState>& states) {
  if (inventory.provider == "simulated")
    fmt::print("provider: simulated (a simulated inventory, not this host's GPUs)\n\n");
  else
    fmt::print("provider: {}\n\n", inventory.provider);
  std::vector<std::vector<std::string>> rows = {
      {"GPU", "VENDOR", "MODEL", "ARCH", "MEMORY USED/TOTAL", "PCI BUS", "NUMA", "UUID", "STATE"}};
  for (const auto& g : inventory.gpus) {
    rows.push_back({std::to_string(g.index), g.vendor, g.model, g.arch.empty() ? "-" : g.arch,
                    fmt::format("{} / {} MiB", g.memory_used_mib, g.memory_total_mib),
                    g.pci_bus_id.empty() ? "-" : g.pci_bus_id,
                    g.numa_node < 0 ? "-" : std::to_string(g.numa_node),
                    g.uuid.empty() ? "-" : g.uuid,
                    state_cell(states.at(static_cast<std::size_t>(g.index)))});
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    fmt::print("{}\n", line);
  }
  if (inventory.gpus.size() < 2) return;
  fmt::print("\nlinks:\n");
  std::size_t n = inventory.gpus.size();
  std::string header = fmt::format("{:<6}", "");
  for (std::size_t b = 0; b < n; ++b) header += fmt::format("{:<6}", fmt::format("GPU{}", b));
  while (!header.empty() && header.back() == ' ') header.pop_back();
  fmt::print("{}\n", header);
  for (std::size_t a = 0; a < n; ++a) {
    std::string line = fmt::format("{:<6}", fmt::format("GPU{}", a));
    for (std::size_t b = 0; b < n; ++b)
      line += fmt::format("{:<6}", link_cell(inventory, static_cast<int>(a), static_cast<int>(b)));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
  fmt::print(
      "\nNV#: NVLink (# links)  XGMI: AMD Infinity Fabric  PIX: one PCIe switch  "
      "PHB: a PCIe host bridge  NODE: within a NUMA node  SYS: across NUMA nodes\n");
}

// --all-hosts: the host store's rows of every host. Free GPUs of other hosts are not in it (it
// holds leases and quarantine, not inventories).
int print_fleet(const GpusArgs& args, const engine::RunOptions& options) {
  auto host = store::open_host_store(options.host_store);
  if (!host) return report_error(host.error());
  auto leases = (*host)->list_fleet_gpu_leases();
  if (!leases) return report_error(leases.error());
  auto quarantine = (*host)->list_fleet_gpu_quarantine();
  if (!quarantine) return report_error(quarantine.error());
  struct Row {
    std::string host, gpu, state, detail;
    store::TimeMs since = 0;
  };
  std::vector<Row> rows;
  for (const auto& l : *leases)
    rows.push_back({l.owner.host, l.gpu_uuid, "leased", l.holder, l.granted_at});
  for (const auto& q : *quarantine)
    rows.push_back({q.host, q.gpu_uuid, "quarantined", q.reason, q.since});
  std::ranges::sort(rows, {}, [](const Row& r) { return std::tie(r.host, r.gpu, r.state); });
  if (args.json) {
    auto json = nlohmann::json::array();
    for (const auto& r : rows)
      json.push_back({{"host", r.host},
                      {"uuid", r.gpu},
                      {"state", {{"kind", r.state}, {"detail", r.detail}, {"since_ms", r.since}}}});
    fmt::print(
        "{}\n",
        nlohmann::json{{"host_store", options.host_store.describe()}, {"gpus", json}}.dump(2));
    return 0;
  }
  fmt::print("host store: {}\n", options.host_store.describe());
  if (rows.empty()) {
    fmt::print("no GPU of any host is leased or quarantined\n");
    return 0;
  }
  std::size_t host_width = 4, gpu_width = 3;
  for (const auto& r : rows) {
    host_width = std::max(host_width, r.host.size());
    gpu_width = std::max(gpu_width, r.gpu.size());
  }
  fmt::print("\n{:<{}}  {:<{}}  STATE\n", "HOST", host_width, "GPU", gpu_width);
  for (const auto& r : rows)
    fmt::print("{:<{}}  {:<{}}  {}: {}\n", r.host, host_width, r.gpu, gpu_width, r.state, r.detail);
  fmt::print("\nfree GPUs are not listed: the host store holds leases and quarantine only\n");
  return 0;
}

int run_gpus(const GpusArgs& args) {
  engine::RunOptions options;
  if (!args.simulate.empty()) options.simulate_gpus = args.simulate;
  if (!args.sysfs_root.empty()) options.gpu_sysfs_root = args.sysfs_root;
  if (auto applied = apply_host_config(args.config, options); !applied)
    return report_error(applied.error());
  options.gpu_health.provider_deadline = std::chrono::milliseconds(args.deadline_ms);
  if (args.all_hosts) return print_fleet(args, options);
  engine::GpuSupervisor supervisor(options);
  auto inventory = supervisor.inventory();
  if (!inventory) return report_error(inventory.error());
  if (!args.cdi_spec.empty()) return write_cdi_spec(args, **inventory);
  if (!args.release.empty()) {
    auto released = supervisor.release(args.release);
    if (!released) return report_error(released.error());
    if (*released)
      fmt::print("GPU {} released from quarantine\n", args.release);
    else
      fmt::print("GPU {} was not quarantined\n", args.release);
    return 0;
  }
  if ((*inventory)->gpus.empty()) {
    if (args.json)
      fmt::print("{}\n", gpu::inventory_to_json(**inventory).dump(2));
    else
      fmt::print("no GPUs found\n");
    return 0;
  }
  auto states = supervisor.states();
  if (!states) return report_error(states.error());
  const auto& shown = **inventory;  // refreshed by states()
  if (args.json) {
    auto json = gpu::inventory_to_json(shown);
    for (std::size_t i = 0; i < states->size(); ++i) {
      const auto& state = (*states)[i];
      json["gpus"][i]["state"] = {{"kind", engine::gpu_state_name(state.kind)},
                                  {"detail", state.detail},
                                  {"since_ms", state.since}};
    }
    fmt::print("{}\n", json.dump(2));
  } else {
    print_table(shown, *states);
  }
  return 0;
}

}  // namespace

void add_gpus_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<GpusArgs>();
  auto* cmd = app.add_subcommand("gpus", "list this host's GPUs and how they are connected");
  cmd->add_flag("--json", args->json, "print the inventory as JSON (docs/gpus.md)");
  cmd->add_option("--simulate-gpus", args->simulate,
                  "read a simulated inventory from this JSON file instead of the host");
  cmd->add_option("--sysfs-root", args->sysfs_root,
                  "read the amdgpu sysfs tree under this directory instead of NVML or /sys");
  cmd->add_option("--deadline-ms", args->deadline_ms,
                  "give up on a driver that does not answer within this many milliseconds")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  cmd->add_option("--config", args->config,
                  "host configuration (default: $KILN_CONFIG, else /etc/kiln/kiln.yml)");
  cmd->add_option("--cdi-spec", args->cdi_spec,
                  "write a CDI specification of the NVIDIA GPUs to this file (for podman "
                  "without nvidia-ctk; docs/containers.md)");
  cmd->add_option("--driver-root", args->driver_root,
                  "find the driver's device nodes and libraries under this directory (default /)");
  cmd->add_flag("--all-hosts", args->all_hosts,
                "every host's leased and quarantined GPUs, from a host store a fleet shares "
                "(docs/scale-out.md)");
  cmd->add_option("--release", args->release,
                  "return this quarantined GPU (index or UUID) to service");
  cmd->callback([args, &exit_code] { exit_code = run_gpus(*args); });
}

}  // namespace kiln::cli
