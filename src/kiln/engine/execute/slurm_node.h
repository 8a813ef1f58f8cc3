#pragma once
// The node side of a Slurm job's GPUs (slurm_agent.h): the GPUs Slurm allocated to the job, found
// in this node's inventory (its provider: NVML, amdgpu sysfs, or kiln.yml slurm.simulate_gpus),
// checked before and after the job by the same GpuSupervisor and health rules as a host job's
// (place/gpu_supervisor.h, gpu/health.h). A GPU that fails either check drains the node:
// `scontrol update NodeName=NODE State=DRAIN Reason="kiln: ..."`, said in the job's log, so that
// Slurm places no further job there until someone looks (docs/scale-out.md "Slurm").

#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/place/gpu_supervisor.h"

namespace kiln::engine {

// The node's GPU indexes of the job's allocation: SLURM_JOB_GPUS (Slurm's node-wide GPU ids),
// else CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES when they are indexes; none when the job has
// no GPU. An error names a list that is not indexes.
Result<std::vector<int>> slurm_allocated_gpus(const core::Environment& env);

// "kiln: WHAT (Slurm job N)", on one line and short enough for a node's reason in sinfo.
std::string slurm_drain_reason(const std::string& what, const std::string& slurm_job);

struct SlurmNodeSetup {
  const RunOptions* options = nullptr;  // the node's provider, health policy and host store
  std::string node;                     // SLURMD_NODENAME
  std::string slurm_job;                // SLURM_JOB_ID
  std::vector<int> allocated;           // slurm_allocated_gpus
  std::string scontrol = "scontrol";    // the command that drains the node
};

class SlurmNodeGpus {
 public:
  explicit SlurmNodeGpus(SlurmNodeSetup setup);

  // Refreshes the node's GPUs (quarantining faulty ones, as a host's scheduling pass does), finds
  // the allocated ones and leases them to the job (their memory now is its baseline). Any that is
  // quarantined, faulty or busy drains the node and is the job's problem: it must not run.
  BeforeJob before_job(const store::GpuLease& lease);
  // The supervisor's after-job check of the job's GPUs; a GPU it quarantined drains the node.
  AfterJob after_job(const std::string& token);

  // The allocated GPUs as the provider reports them (empty before before_job, or with none).
  const std::vector<gpu::GpuInfo>& gpus() const { return gpus_; }

 private:
  // Drains the node for `problems`; the lines say it was done (or why it could not be).
  void drain(const std::vector<std::string>& problems, std::vector<JobLogLine>& lines);

  SlurmNodeSetup setup_;
  GpuSupervisor supervisor_;
  std::vector<gpu::GpuInfo> gpus_;
};

}  // namespace kiln::engine
