#pragma once
// A CDI specification (Container Device Interface, cdiVersion 0.5.0, kind nvidia.com/gpu) for
// NVIDIA GPUs, as `nvidia-ctk cdi generate` writes one, for hosts without the NVIDIA container
// toolkit: podman then gives a container exactly its granted GPUs with --device
// nvidia.com/gpu=UUID (gpu_flags.h). What the spec holds is found on the host through
// HostDriverFiles:
//   per GPU (named by UUID and by index): its device node, /dev/nvidiaN (the NVML minor number,
//     gpu::GpuInfo::device_nodes; without one, N is its index, with a note);
//   for every GPU: /dev/nvidiactl, and /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
//     /dev/nvidia-modeset where present; the driver's user-space libraries of the GPUs' driver
//     version (libcuda.so.VERSION, libnvidia-ml.so.VERSION, ...), each mounted read-only at its
//     host path and at the names of its symlinks there (libcuda.so.1: no ldcache hook is needed);
//     the driver's programs (nvidia-smi, ...); NVIDIA_VISIBLE_DEVICES=void. A library or program
//     found outside the standard directories is mounted at its host path and also at
//     /usr/lib/x86_64-linux-gnu (libraries) or /usr/bin (programs), where an image's loader and
//     PATH look without an ldcache hook.
// The spec is JSON, which CDI reads like YAML (/etc/cdi/*.json).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/gpu/gpu.h"

namespace kiln::container {

// The host's files, as the spec generator sees them (a fake in tests).
class HostDriverFiles {
 public:
  virtual ~HostDriverFiles() = default;
  virtual bool exists(const std::filesystem::path& path) const = 0;
  // The names in a directory; empty when there is none.
  virtual std::vector<std::string> list(const std::filesystem::path& dir) const = 0;
  // The file a path finally names, symlinks followed (the path itself when it is none).
  virtual std::filesystem::path resolve(const std::filesystem::path& path) const = 0;
  // Where the driver's libraries and programs may be: the distributions' library directories,
  // then the host's own (the dynamic linker's /etc/ld.so.conf.d, e.g. /usr/local/nvidia/lib64
  // on cloud GPU images), and /usr/bin then the `bin` beside each extra library directory.
  virtual std::vector<std::filesystem::path> library_dirs() const;
  virtual std::vector<std::filesystem::path> program_dirs() const;
};

// The host's file system, under `root` (paths in the spec stay as the host sees them).
std::unique_ptr<HostDriverFiles> host_driver_files(std::filesystem::path root = "/");

struct CdiSpec {
  nlohmann::json document;
  std::vector<std::string> notes;  // what was not found and left out
};

// The spec for the NVIDIA GPUs among `gpus`. Errors: no NVIDIA GPU, a GPU without a device
// node, no /dev/nvidiactl, no libcuda or libnvidia-ml of the driver's version. A GPU whose
// driver version is unknown ("", "simulated") takes the one version of libcuda.so found.
Result<CdiSpec> nvidia_cdi_spec(const std::vector<gpu::GpuInfo>& gpus,
                                const HostDriverFiles& files);

}  // namespace kiln::container
