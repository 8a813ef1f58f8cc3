#pragma once
// What passes between the Slurm executor (slurm_executor.h) and `kiln agent` on the node, as
// files in the job's spool directory (kiln.yml slurm.spool, which both sides see):
//   job.json      the job: its JobSpec, the run's options, repository and event, and where the
//                 store is (mode 0600: it holds the run's secrets), the GPU health policy;
//                 written before sbatch.
//   outcome.json  how the job ended (its JobSummary), written by the agent when the job is done
//                 (to a temporary name, then renamed: a reader sees all of it or none).
// Everything else a job produces (its row, steps, log lines as they are printed, outputs,
// artifacts) the agent writes to the run's store through the same job runner as a host job.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/plan/event.h"

namespace kiln::engine {

// A job as the agent runs it.
struct SlurmJobFile {
  JobSpec spec;
  RunOptions options;  // the run's: secrets, env, vars, actor, container and step settings
  RepositoryInfo repo;
  plan::Event event;
  std::string store;  // a SQLite file or a postgresql:// URL (RunOptions::agent_store)
  std::filesystem::path kiln_dir;
  std::filesystem::path bin_dir;  // kiln.yml slurm.bin_dir: where the node's scontrol is
  std::string simulate_gpus;      // kiln.yml slurm.simulate_gpus ("{node}" not yet replaced)
};

nlohmann::json to_json(const SlurmJobFile& job);
// The workflow files are read again from the repository (spec.workflow.path under repo.root):
// the agent sees the checkout the server planned from.
Result<SlurmJobFile> slurm_job_from_json(const nlohmann::json& json);

nlohmann::json outcome_to_json(const JobSummary& summary);
Result<JobSummary> outcome_from_json(const nlohmann::json& json);

// Writes `json` to `path` through a temporary file in the same folder and a rename, with `mode`.
Status write_json_file(const std::filesystem::path& path, const nlohmann::json& json, int mode);
Result<nlohmann::json> read_json_file(const std::filesystem::path& path);

}  // namespace kiln::engine
