#pragma once
// The GPU grant of a job as container engine flags (DESIGN.md "GPU requests"): the container
// sees exactly the granted GPUs, whatever the workflow's options asked for.
//   NVIDIA, docker: --gpus "device=UUID,UUID"   (the NVIDIA container toolkit's hook)
//   NVIDIA, podman: --device nvidia.com/gpu=UUID per GPU   (CDI; `nvidia-ctk cdi generate`
//                   names every GPU by index, UUID and "all"; the UUID form is stable)
//   AMD:            --device /dev/kfd, --device for each granted GPU's own nodes
//                   (/dev/dri/renderD*, /dev/dri/card*), --group-add for the host's video and
//                   render groups (by number: the image may not know their names)
// A job granted no GPU gets no GPU flag at all.

#include <map>
#include <string>
#include <vector>

#include <optional>
#include <string_view>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/request.h"

namespace kiln::container {

enum class EngineKind { podman, docker };

// Host group ids by name ("video" → 44), for --group-add.
using GroupIds = std::map<std::string, int>;

// The host's group ids, read from /etc/group (groups it lacks are left out).
GroupIds host_group_ids();

// The GPU request that a job container's `options:` make (DESIGN.md "GPU requests": after the
// runs-on labels), or nullopt when they ask for no GPU or are not valid options:
//   --gpus all, --device nvidia.com/gpu=all            every NVIDIA GPU
//   --gpus N                                           N NVIDIA GPUs
//   --gpus device=A,B, --device nvidia.com/gpu=A ...   as many NVIDIA GPUs as named (which ones
//                                                      is the allocator's choice)
//   --device /dev/kfd with /dev/dri (or without any render node)   every AMD GPU
//   --device /dev/kfd with /dev/dri/renderD* nodes     as many AMD GPUs as render nodes named
//   --device /dev/dri (or its nodes) without /dev/kfd  nothing: Intel GPUs use /dev/dri too
//                                                      (check.h warns; container_job.h passes
//                                                      the nodes on a host without /dev/kfd)
std::optional<gpu::GpuRequest> gpu_request_from_options(std::string_view options);

// True when the options name /dev/dri (or nodes under it) but not /dev/kfd.
bool dri_without_kfd(const std::vector<std::string>& dropped_devices);

// The grant's flags. The host's `groups` give the video and render group ids.
std::vector<std::string> gpu_device_flags(EngineKind engine,
                                          const std::vector<gpu::GpuInfo>& granted,
                                          const GroupIds& groups);

}  // namespace kiln::container
