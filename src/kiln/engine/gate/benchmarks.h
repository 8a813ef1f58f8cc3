#pragma once
// The engine's side of the perf gate: after each step, the result files a job listed in
// $KILN_BENCHMARKS are parsed and stored with the job's repository, branch, commit and
// testbed; after the last step the job's results are judged against the history of the
// default branch on the same testbed, and a regression fails the job (docs/perf-gate.md).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/run_as.h"
#include "kiln/gpu/gpu.h"
#include "kiln/perf/gate.h"
#include "kiln/store/store.h"

namespace kiln::engine {

// The testbed of a job: the granted GPUs' models (with counts) and drivers, and the job's
// runs-on labels, sorted. "gpus=NVIDIA H200 x2; driver=550.54.15; labels=gpu:2,self-hosted";
// "gpus=none; labels=ubuntu-latest" for a job without GPUs.
std::string make_testbed(const std::vector<std::string>& labels,
                         const std::vector<gpu::GpuInfo>& gpus);

struct BenchmarkContext {
  std::string repository;      // RepositoryInfo::name
  std::string branch;          // the branch the run is for
  std::string default_branch;  // the baseline
  std::string commit;
  std::string testbed;
  std::int64_t run_id = 0;  // 0: not in a run (the results are then stored without one)
  std::int64_t job_id = 0;  // the store row
};

// Lines for the job's log: (kind, text) with kind "kiln", "error" or "warning".
using LogLines = std::vector<std::pair<std::string, std::string>>;

class BenchmarkCollector {
 public:
  BenchmarkCollector(store::Store& store, BenchmarkContext context)
      : store_(store), context_(std::move(context)) {}

  // Reads the paths appended to `list` since the last call (relative ones are relative to
  // `workspace`), parses and stores their results. A file that cannot be read or parsed is an
  // "error" line: the caller fails the job with it.
  // With `run_as` (jobs.user), a file is read only when that user could read it.
  LogLines collect(const std::filesystem::path& list, const std::filesystem::path& workspace,
                   const core::RunAs* run_as = nullptr);

  struct Verdict {
    LogLines lines;                 // the table, line by line, and a summary
    bool failed = false;            // a gated benchmark regressed
    std::string reason;             // for the job's result when failed
    nlohmann::ordered_json report;  // perf::to_json of the gate, null when nothing was judged
  };
  // Judges every result this job stored. `env` is the job's env (workflow and job level):
  // KILN_PERF_THRESHOLD sets the default threshold in percent, KILN_PERF_GATE=off reports
  // without failing the job.
  Verdict gate(const std::map<std::string, std::string>& env);

  bool empty() const { return stored_.empty(); }

 private:
  store::Store& store_;
  BenchmarkContext context_;
  std::size_t lines_read_ = 0;
  std::vector<store::BenchmarkResult> stored_;
};

}  // namespace kiln::engine
