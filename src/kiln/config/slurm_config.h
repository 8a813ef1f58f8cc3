#pragma once
// kiln.yml's `slurm:` section: which jobs are submitted to Slurm instead of run on this host, and
// how (docs/scale-out.md "Slurm"). A job goes to the first pool whose labels it all has.
//
//   slurm:
//     spool: /shared/kiln/spool     # job files and outcomes: a directory the nodes also see
//     agent: /shared/bin/kiln       # kiln on the nodes (default: this kiln's own path)
//     bin_dir: /usr/bin             # where sbatch, squeue and scancel are (default: PATH)
//     simulate_gpus: /ci/{node}.json  # for tests: each node's GPUs from a simulated inventory
//     pools:
//       - labels: [gpu]             # `gpu` matches gpu, gpu:2, ...: the label or LABEL:...
//         partition: gpu
//         account: ml
//         qos: normal
//         exclusive: false          # --exclusive
//         gpu-model: {h100: h100}   # gpu-model:<value> -> the site's GRES type (gpu:TYPE:N)
//         sbatch_args: [--constraint=ib]
//         features:                 # a job's gpu-vendor/-arch/-mem label -> Slurm node feature
//           gpu-arch:sm_90: hopper  # (--constraint=hopper); "": every node has it
//           gpu-mem:80G: hbm80      # nodes whose GPUs have 80G: taken by gpu-mem:N up to 80G
//         nodes:                    # optional: the partition's kinds of node, by their GRES and
//           - gres: gpu:h100:8      # features as `sinfo -p gpu -h -o '%G %f'` prints them; with
//             features: [hopper]    # it, a job no node can ever hold is an error at validation
//           - gres: gpu:h100:4,gpu:a100:4

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/gpu/request.h"

namespace kiln::config {

// One kind of node of a pool's partition, by its GRES (kiln.yml pools[].nodes[].gres).
struct SlurmNodeKind {
  std::string gres;                 // as written: "gpu:h100:4,gpu:a100:4"
  std::map<std::string, int> gpus;  // GRES `gpu` by type ("" untyped) -> count
  std::vector<std::string> features;
  SourceLocation where;
};

// A GPU label of runs-on and the Slurm node feature that has it (kiln.yml pools[].features).
struct SlurmFeature {
  std::string label;      // as written: "gpu-arch:sm_90"
  gpu::GpuRequest means;  // its one qualifier: vendor, arch or min_free_mib
  std::string feature;    // empty: every node of the pool has it (no constraint)
};

struct SlurmPool {
  std::vector<std::string> labels;
  std::string partition, account, qos;  // empty: Slurm's default
  bool exclusive = false;
  std::map<std::string, std::string> gres_types;  // gpu-model value -> GRES type
  std::vector<std::string> sbatch_args;
  std::vector<SlurmFeature> features;
  std::vector<SlurmNodeKind> nodes;  // empty: not described (Slurm's word at submission)
  SourceLocation where;              // of the pool, for messages

  // The --gres value of a request ("gpu:h100:2", "gpu:1"; empty: no GPU), or why the pool cannot
  // submit it: gpu:all (a node's GPU count is Slurm's), a gpu-model it maps to no GRES type.
  Result<std::string> gres_of(const gpu::GpuRequest& request) const;
  // The --constraint value of a request's gpu-vendor, gpu-arch and gpu-mem
  // ("hopper&(hbm80|hbm141)"; empty: none), or the label the pool's features do not map.
  Result<std::string> constraint_of(const gpu::GpuRequest& request) const;
  // Why no node of the pool can ever hold the request (gres_of's and constraint_of's errors, or no
  // kind of node in `nodes` with the GPUs of the type and the features); nullopt when one can, or
  // `nodes` is empty.
  std::optional<std::string> never_placed(const gpu::GpuRequest& request) const;

  // True when each of the pool's labels is one of `job_labels`, or the prefix of one before ':'.
  bool matches(const std::vector<std::string>& job_labels) const;
};

struct SlurmConfig {
  std::filesystem::path spool;
  std::filesystem::path agent;    // empty: /proc/self/exe
  std::filesystem::path bin_dir;  // empty: from PATH
  // A simulated inventory per node (gpu/simulated_provider.h), "{node}" replaced by the node's
  // name; empty: the node's own provider (NVML, amdgpu sysfs). For CI without GPUs.
  std::string simulate_gpus;
  std::vector<SlurmPool> pools;

  // The pool a job with these runs-on labels goes to; null: it runs on this host.
  const SlurmPool* pool_for(const std::vector<std::string>& job_labels) const;
};

}  // namespace kiln::config
