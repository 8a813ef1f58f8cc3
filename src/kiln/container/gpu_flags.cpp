#include "kiln/container/gpu_flags.h"

#include <fstream>

namespace kiln::container {

GroupIds host_group_ids() {
  GroupIds ids;
  std::ifstream in("/etc/group");
  std::string line;
  while (std::getline(in, line)) {
    // name:x:gid:members
    auto first = line.find(':');
    if (first == std::string::npos) continue;
    auto second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    auto third = line.find(':', second + 1);
    std::string gid = line.substr(second + 1, third - second - 1);
    try {
      ids[line.substr(0, first)] = std::stoi(gid);
    } catch (...) {
      // a malformed line names no group
    }
  }
  return ids;
}

std::vector<std::string> gpu_device_flags(EngineKind engine,
                                          const std::vector<gpu::GpuInfo>& granted,
                                          const GroupIds& groups) {
  std::vector<std::string> flags;
  std::vector<const gpu::GpuInfo*> nvidia, amd;
  for (const auto& info : granted) (info.vendor == "amd" ? amd : nvidia).push_back(&info);
  if (!nvidia.empty()) {
    if (engine == EngineKind::docker) {
      std::string list;
      for (const auto* info : nvidia) list += (list.empty() ? "" : ",") + info->uuid;
      flags.push_back("--gpus");
      flags.push_back("\"device=" + list + "\"");
    } else {
      for (const auto* info : nvidia) {
        flags.push_back("--device");
        flags.push_back("nvidia.com/gpu=" + info->uuid);
      }
    }
  }
  if (!amd.empty()) {
    flags.push_back("--device");
    flags.push_back("/dev/kfd");
    for (const auto* info : amd)
      for (const auto& node : info->device_nodes) {
        flags.push_back("--device");
        flags.push_back(node);
      }
    for (const char* name : {"video", "render"}) {
      auto it = groups.find(name);
      if (it == groups.end()) continue;
      flags.push_back("--group-add");
      flags.push_back(std::to_string(it->second));
    }
  }
  return flags;
}

}  // namespace kiln::container
