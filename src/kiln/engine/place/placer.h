#pragma once
// The Placer seam: where the scheduler asks for a job's GPUs and gets the job's device
// environment. The host implementation (HostPlacer) leases GPUs through the GpuSupervisor, best
// connected first; tests use a fake that grants from a list.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/exec/masker.h"
#include "kiln/gpu/allocator.h"
#include "kiln/gpu/request.h"
#include "kiln/gpu/topology.h"

namespace kiln::engine {

struct PlaceRequest {
  gpu::GpuRequest gpus;
  std::string holder;  // what `kiln gpus` shows (unmasked: the placer masks it)
  std::string job_token;
  std::int64_t run_id = 0;
};

struct Placement {
  enum class Verdict {
    granted,  // `gpus` are leased to the job
    wait,     // not now: `reason` (said once per job)
    never,    // this host can never serve it: `reason`
    error,    // the GPU layer failed: `reason`
  };
  Verdict verdict = Verdict::wait;
  std::vector<gpu::GpuInfo> gpus;
  std::string reason;
  std::vector<std::string> warnings;  // the GPU layer's notes (quarantine, reclaimed leases)
};

class Placer {
 public:
  virtual ~Placer() = default;
  // A new pass over the queue: the GPUs' state is read again (once, when a job asks), and a job
  // that must wait reserves its GPUs so that later ones backfill around them (gpu::QueuePass).
  virtual void begin_pass() = 0;
  virtual Placement place(const PlaceRequest& request) = 0;
  // The environment that shows a job exactly its GPUs (none: CUDA sees none).
  virtual std::map<std::string, std::string> environment(
      const std::vector<gpu::GpuInfo>& gpus) const = 0;
};

// DESIGN.md "GPU requests": CUDA_VISIBLE_DEVICES (UUIDs) or ROCR/HIP_VISIBLE_DEVICES, KILN_GPUS,
// KILN_GPU_UUIDS.
std::map<std::string, std::string> device_environment(const std::vector<gpu::GpuInfo>& gpus);

class HostPlacer final : public Placer {
 public:
  HostPlacer(const RunOptions& options, const exec::Masker& masker)
      : supervisor_(options), masker_(masker), pin_(options.gpu_pin) {}
  void begin_pass() override { pass_.reset(); }
  Placement place(const PlaceRequest& request) override;
  std::map<std::string, std::string> environment(
      const std::vector<gpu::GpuInfo>& gpus) const override {
    return device_environment(gpus);
  }
  // The job side of the GPU layer (after-job checks, holders, samplers): the host executor.
  GpuSupervisor& supervisor() { return supervisor_; }

 private:
  GpuSupervisor supervisor_;  // inventory, leases and health, from the first job that asks
  const exec::Masker& masker_;
  gpu::Inventory pass_inventory_;            // the latest snapshot's GPUs
  std::unique_ptr<gpu::Topology> topology_;  // over pass_inventory_
  std::optional<gpu::QueuePass> pass_;
  // RunOptions::gpu_pin: the GPUs outside it are never offered (computed with topology_).
  std::optional<RunOptions::GpuPin> pin_;
  std::set<int> unpinned_;
  std::string pin_reason_;  // why a GPU job cannot run here, when no GPU is pinned
  std::size_t pinned_ = 0;
};

}  // namespace kiln::engine
