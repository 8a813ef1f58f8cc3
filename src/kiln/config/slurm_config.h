#pragma once
// kiln.yml's `slurm:` section: which jobs are submitted to Slurm instead of run on this host, and
// how (docs/scale-out.md "Slurm"). A job goes to the first pool whose labels it all has.
//
//   slurm:
//     spool: /shared/kiln/spool     # job files and outcomes: a directory the nodes also see
//     agent: /shared/bin/kiln       # kiln on the nodes (default: this kiln's own path)
//     bin_dir: /usr/bin             # where sbatch, squeue and scancel are (default: PATH)
//     pools:
//       - labels: [gpu]             # `gpu` matches gpu, gpu:2, ...: the label or LABEL:...
//         partition: gpu
//         account: ml
//         qos: normal
//         exclusive: false          # --exclusive
//         gpu-model: {h100: h100}   # gpu-model:<value> -> the site's GRES type (gpu:TYPE:N)
//         sbatch_args: [--constraint=ib]

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::config {

struct SlurmPool {
  std::vector<std::string> labels;
  std::string partition, account, qos;  // empty: Slurm's default
  bool exclusive = false;
  std::map<std::string, std::string> gres_types;  // gpu-model value -> GRES type
  std::vector<std::string> sbatch_args;
  SourceLocation where;  // of the pool, for messages

  // True when each of the pool's labels is one of `job_labels`, or the prefix of one before ':'.
  bool matches(const std::vector<std::string>& job_labels) const;
};

struct SlurmConfig {
  std::filesystem::path spool;
  std::filesystem::path agent;    // empty: /proc/self/exe
  std::filesystem::path bin_dir;  // empty: from PATH
  std::vector<SlurmPool> pools;

  // The pool a job with these runs-on labels goes to; null: it runs on this host.
  const SlurmPool* pool_for(const std::vector<std::string>& job_labels) const;
};

}  // namespace kiln::config
