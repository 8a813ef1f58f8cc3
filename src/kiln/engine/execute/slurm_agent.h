#pragma once
// `kiln agent JOB_FILE`: runs the one job of a Slurm job file (slurm_job.h) on the node Slurm
// allocated, through the job runner every host job runs through (job_runner.h), writing its row,
// steps, log lines and outputs to the run's store, then its outcome beside the job file. The
// job's GPUs are Slurm's allocation: CUDA_VISIBLE_DEVICES (or ROCR_VISIBLE_DEVICES) as Slurm set
// it is the last layer of every step's environment, and the job row's extra.slurm records the
// Slurm job id, the node and the GPUs. The allocated GPUs are checked before and after the job
// on the node's own provider (slurm_node.h); one that fails drains the node.

#include <filesystem>
#include <map>
#include <string>

#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"
#include "kiln/engine/engine.h"
#include "kiln/exec/cancel_token.h"

namespace kiln::engine {

// The device environment of a job from the variables Slurm set for its allocation (`env`: the
// agent's own): CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES kept as Slurm set them, KILN_GPUS
// their count; without either, the environment of no GPU (device_environment({})).
std::map<std::string, std::string> slurm_gpu_environment(const core::Environment& env);

// Runs the job; its outcome is in `job_file`'s folder as outcome.json. `observer` hears the lines
// (the agent prints them to Slurm's output file). An error: the job could not be run at all.
Result<JobSummary> run_slurm_agent(const std::filesystem::path& job_file,
                                   const exec::CancelToken& cancel, RunObserver& observer);

}  // namespace kiln::engine
