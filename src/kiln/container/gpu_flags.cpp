#include "kiln/container/gpu_flags.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "kiln/container/options.h"

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

std::optional<gpu::GpuRequest> gpu_request_from_options(std::string_view text) {
  auto options = parse_options(text, {});
  if (!options) return std::nullopt;
  gpu::GpuRequest request;
  int nvidia_named = 0, render_nodes = 0;
  bool nvidia_all = false, kfd = false, dri_all = false;
  if (options->gpus) {
    std::string value = *options->gpus;
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (value == "all") {
      nvidia_all = true;
    } else if (value.starts_with("device=")) {
      std::string_view list = std::string_view(value).substr(7);
      if (!list.empty())
        nvidia_named += 1 + static_cast<int>(std::count(list.begin(), list.end(), ','));
    } else {
      char* end = nullptr;
      long count = std::strtol(value.c_str(), &end, 10);
      if (end != value.c_str() && *end == '\0' && count > 0 && count < 1024)
        nvidia_named += static_cast<int>(count);
    }
  }
  for (const auto& device : options->dropped_devices) {
    std::string_view host = std::string_view(device).substr(0, device.find(':'));
    if (host == "nvidia.com/gpu=all")
      nvidia_all = true;
    else if (host.starts_with("nvidia.com/gpu="))
      ++nvidia_named;
    else if (host == "/dev/kfd")
      kfd = true;
    else if (host == "/dev/dri" || host == "/dev/dri/")
      dri_all = true;
    else if (host.starts_with("/dev/dri/renderD"))
      ++render_nodes;
  }
  if (nvidia_all || nvidia_named > 0) {
    request.vendor = "nvidia";
    request.all = nvidia_all;
    request.count = nvidia_all ? 0 : nvidia_named;
    return request;
  }
  // /dev/dri alone is no AMD request: Intel GPUs (and NVIDIA's display nodes) live there too.
  if (kfd) {
    request.vendor = "amd";
    request.all = dri_all || render_nodes == 0;
    request.count = request.all ? 0 : render_nodes;
    return request;
  }
  return std::nullopt;
}

bool dri_without_kfd(const std::vector<std::string>& dropped_devices) {
  bool dri = false, kfd = false;
  for (const auto& device : dropped_devices) {
    dri = dri || device.starts_with("/dev/dri");
    kfd = kfd || device.starts_with("/dev/kfd");
  }
  return dri && !kfd;
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
