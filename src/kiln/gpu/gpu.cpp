#include "kiln/gpu/gpu.h"

#include <array>
#include <utility>

namespace kiln::gpu {

namespace {

struct KindName {
  LinkKind kind;
  std::string_view name;
};
constexpr std::array<KindName, 6> k_kind_names{{
    {LinkKind::nvlink, "nvlink"},
    {LinkKind::xgmi, "xgmi"},
    {LinkKind::pcie_switch, "pcie-switch"},
    {LinkKind::pcie_host, "pcie-host"},
    {LinkKind::numa, "numa"},
    {LinkKind::sys, "sys"},
}};

}  // namespace

int link_rank(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink:
    case LinkKind::xgmi:
      return 0;
    case LinkKind::pcie_switch:
      return 1;
    case LinkKind::pcie_host:
      return 2;
    case LinkKind::numa:
      return 3;
    case LinkKind::sys:
      return 4;
  }
  return 4;
}

std::string_view link_kind_name(LinkKind kind) {
  for (const auto& entry : k_kind_names)
    if (entry.kind == kind) return entry.name;
  return "sys";
}

std::optional<LinkKind> parse_link_kind(std::string_view name) {
  for (const auto& entry : k_kind_names)
    if (entry.name == name) return entry.kind;
  return std::nullopt;
}

const GpuLink* Inventory::find_link(int a, int b) const {
  const GpuLink* best = nullptr;
  for (const auto& link : links) {
    if ((link.a == a && link.b == b) || (link.a == b && link.b == a)) {
      if (!best || link_rank(link.kind) < link_rank(best->kind)) best = &link;
    }
  }
  return best;
}

LinkKind Inventory::connection(int a, int b) const {
  if (const auto* link = find_link(a, b)) return link->kind;
  auto numa_of = [&](int index) {
    return index >= 0 && static_cast<std::size_t>(index) < gpus.size() ? gpus[index].numa_node : -1;
  };
  int na = numa_of(a);
  if (na >= 0 && na == numa_of(b)) return LinkKind::numa;
  return LinkKind::sys;
}

nlohmann::json inventory_to_json(const Inventory& inventory) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : inventory.gpus) {
    nlohmann::json processes = nlohmann::json::array();
    for (const auto& p : g.processes)
      processes.push_back({{"pid", p.pid}, {"used_mib", p.used_mib}});
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"vendor", g.vendor},
                    {"model", g.model},
                    {"arch", g.arch},
                    {"pci_bus_id", g.pci_bus_id},
                    {"numa_node", g.numa_node},
                    {"memory_total_mib", g.memory_total_mib},
                    {"memory_used_mib", g.memory_used_mib},
                    {"device_nodes", g.device_nodes},
                    {"driver_version", g.driver_version},
                    {"processes", std::move(processes)},
                    {"faults", g.faults}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : inventory.links) {
    links.push_back({{"a", l.a},
                     {"b", l.b},
                     {"kind", std::string(link_kind_name(l.kind))},
                     {"width", l.width}});
  }
  return {{"provider", inventory.provider}, {"gpus", std::move(gpus)}, {"links", std::move(links)}};
}

}  // namespace kiln::gpu
