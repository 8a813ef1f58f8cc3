#pragma once
// The GPU memory of each process on an amdgpu device, from the DRM fdinfo the kernel writes for
// every open DRM file (Documentation/gpu/drm-usage-stats.rst; amdgpu since Linux 5.14):
//
//   <root>/proc/<pid>/fd/<fd>       a link to /dev/dri/renderD<minor> (or /dev/dri/card<N>)
//   <root>/proc/<pid>/fdinfo/<fd>   "key:\tvalue" lines, among them
//       drm-driver:     amdgpu
//       drm-pdev:       0000:03:00.0            the GPU's PCI address (its PCI_SLOT_NAME)
//       drm-client-id:  7                       one DRM client; dup()ed fds share it
//       drm-memory-vram: 2097152 KiB            kernels before 6.8 (amdgpu's own key)
//       drm-resident-vram / drm-total-vram: N KiB   the common keys of newer kernels
//
// A process's VRAM on a GPU is the sum over its distinct clients of that GPU: resident VRAM where
// the kernel gives it (what the buffers hold in VRAM now), else drm-memory-vram, else
// drm-total-vram. Values carry a unit (KiB, MiB, GiB) or none (bytes). <root> is "/" on a host
// and a fixture tree in tests (tests/data/gpu/amd-mi250/proc, make_amd_fixtures.py). Only the
// processes whose fds the caller may read count: Kiln's jobs run as Kiln's user.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

// One DRM client as one fdinfo file describes it.
struct DrmClient {
  std::string driver;                       // drm-driver
  std::string pdev;                         // drm-pdev, lower case
  std::optional<std::uint64_t> client_id;   // drm-client-id
  std::optional<std::uint64_t> vram_bytes;  // by the rule above; nullopt: no VRAM key
};

// Parses the text of one fdinfo file; nullopt when it describes no DRM client (no drm-driver).
// Malformed values are skipped, never an error: the file is the kernel's, read while it changes.
std::optional<DrmClient> parse_drm_fdinfo(std::string_view text);

// Every process under <root>/proc with an amdgpu DRM file open: its VRAM per GPU, keyed by the
// GPU's PCI address (lower case, "0000:03:00.0"), processes in pid order, MiB rounded down.
std::map<std::string, std::vector<GpuProcess>> read_amdgpu_process_memory(
    const std::filesystem::path& root);

// The same, for a sampler called many times: the walk of every process's fds costs milliseconds
// on a busy host (docs/performance.md), so it is done at most every `rescan` (and on the first
// call); in between only the fdinfo files of the DRM fds the last walk found are re-read, so
// their memory is current and a process that exits drops out at once, while a process that
// opens a GPU is seen within `rescan`. Thread-safe (a sample that outlived its deadline may
// still be reading when the next one starts).
class AmdgpuProcessScanner {
 public:
  AmdgpuProcessScanner(std::filesystem::path root, std::chrono::milliseconds rescan)
      : root_(std::move(root)), rescan_(rescan) {}
  std::map<std::string, std::vector<GpuProcess>> read();

 private:
  struct DrmFd {
    int pid = 0;
    std::filesystem::path fdinfo;
  };
  std::mutex mutex_;
  std::filesystem::path root_;
  std::chrono::milliseconds rescan_;
  std::optional<std::chrono::steady_clock::time_point> last_walk_;
  std::vector<DrmFd> known_;  // the DRM fds of the last walk
};

}  // namespace kiln::gpu
