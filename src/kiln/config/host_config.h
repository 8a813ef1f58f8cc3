#pragma once
// The host configuration, kiln.yml (DESIGN.md "Configuration"): what one host or server is set
// up to do. Every key has a default, so a host without the file works; an unknown key, a value
// of the wrong type or a bad value is an error at FILE:LINE:COL (exit code 2).
//
//   host_store: /var/lib/kiln/host.db      # GPU leases and quarantine (relative: to this file)
//   gpus:
//     labels:                              # custom runs-on labels -> GPU requests (labels.h)
//       gpu-a100: gpu gpu-model:a100
//       linux.rocm.gpu.{arch}.{count}: gpu:{count} gpu-vendor:amd gpu-arch:{arch}
//       roc-gpu-mi200: [gpu-vendor:amd, gpu-arch:gfx90a]  # a list works too (quote {..} in [])
//     health:                              # gpu/health.h
//       max_memory_used_before_job: 5%     # or 2G, 512M
//       memory_tolerance_after_job: 512M
//       memory_grace: 10s                  # 500ms, 10s, 2m
//       provider_deadline: 10s
//     telemetry:                           # gpu/telemetry.h, docs/gpus.md "Telemetry"
//       enabled: true                      # false: no sampling (no GPU summary, no budgets)
//       interval: 1s                       # 100ms (10 Hz) at the fastest
//       memory_budget: 40G                 # default GPU memory budget per GPU of a job
//   containers:                            # container/options.h, docs/containers.md
//     engine: podman                       # podman, docker, auto or a path (default auto)
//     pull: missing                        # never, missing, always
//     allow: [privileged, host-network]    # refused options this host allows
//     user: "1000:1000"                    # forced on every job and service container
//     limits: {memory: 16g, cpus: 8, pids: 4096}

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/container/options.h"
#include "kiln/gpu/health.h"
#include "kiln/gpu/labels.h"
#include "kiln/gpu/telemetry.h"

namespace kiln::config {

struct HostConfig {
  std::filesystem::path file;  // where it was read; empty: no file, every default
  std::optional<std::filesystem::path> host_store;
  gpu::GpuLabelMap gpu_labels;
  gpu::HealthPolicy gpu_health;
  std::string container_engine;  // empty: not set here
  std::string pull_policy;       // empty: not set here
  container::ContainerPolicy container_policy;
  gpu::TelemetryPolicy gpu_telemetry;
};

// `file` names the text in errors and anchors relative paths.
Result<HostConfig> parse_host_config(std::string_view text, const std::filesystem::path& file);
Result<HostConfig> load_host_config(const std::filesystem::path& file);

// The configuration a command uses: `explicit_file` (--config) when given, else $KILN_CONFIG when
// set, else /etc/kiln/kiln.yml when it exists, else the defaults. A named file that does not
// exist is an error.
Result<HostConfig> find_host_config(const std::optional<std::filesystem::path>& explicit_file);

// "500ms", "10s", "2m", "1h".
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace kiln::config
