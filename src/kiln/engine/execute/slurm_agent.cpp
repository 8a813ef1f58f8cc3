#include "kiln/engine/execute/slurm_agent.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/engine/clock.h"
#include "kiln/engine/execute/job_runner.h"
#include "kiln/engine/execute/slurm_job.h"
#include "kiln/engine/execute/slurm_node.h"
#include "kiln/engine/place/placer.h"
#include "kiln/engine/record/masking.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/exec/masker.h"
#include "kiln/store/postgres_store.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;

std::string value_of(const core::Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

int count_of(const std::string& list) {
  if (list.empty()) return 0;
  return static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
}

Result<std::unique_ptr<store::Store>> open_agent_store(const std::string& location) {
  // The server's store: its running runs are not this process's to mark interrupted.
  if (store::is_postgres_url(location)) {
    store::PostgresStoreOptions postgres;
    postgres.url = location;
    postgres.mark_interrupted_on_open = false;
    return store::open_postgres_store(postgres);
  }
  store::SqliteStoreOptions sqlite;
  sqlite.mark_interrupted_on_open = false;
  return store::open_sqlite_store(location, sqlite);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

std::map<std::string, std::string> slurm_gpu_environment(const core::Environment& env) {
  std::map<std::string, std::string> out;
  const std::string cuda = value_of(env, "CUDA_VISIBLE_DEVICES");
  const std::string rocr = value_of(env, "ROCR_VISIBLE_DEVICES");
  if (cuda.empty() && rocr.empty()) return device_environment({});
  if (!rocr.empty()) {
    out["ROCR_VISIBLE_DEVICES"] = rocr;
    out["HIP_VISIBLE_DEVICES"] = value_of(env, "HIP_VISIBLE_DEVICES");
    if (out["HIP_VISIBLE_DEVICES"].empty()) out.erase("HIP_VISIBLE_DEVICES");
    out["KILN_GPUS"] = std::to_string(count_of(rocr));
  } else {
    out["CUDA_VISIBLE_DEVICES"] = cuda;
    out["KILN_GPUS"] = std::to_string(count_of(cuda));
  }
  // Slurm names the GPUs by index on the node; their UUIDs are the node's driver's.
  out["KILN_GPU_UUIDS"] = "";
  return out;
}

Result<JobSummary> run_slurm_agent(const fs::path& job_file, const exec::CancelToken& cancel,
                                   RunObserver& observer) {
  KILN_TRY(auto json, read_json_file(job_file));
  KILN_TRY(auto job, slurm_job_from_json(json));
  KILN_TRY(auto store, open_agent_store(job.store));

  exec::Masker masker;
  for (const auto& [name, value] : job.options.secrets) masker.add(value);
  MaskingStore masked_store(*store, masker);
  SystemClock clock;
  StoreRunRecorder recorder(masked_store, clock,
                            [&observer](const std::string& text) { observer.warning(text); });

  const core::Environment env = core::current_environment();
  const JobSpec& s = job.spec;
  const std::string node = value_of(env, "SLURMD_NODENAME");
  const std::string slurm_job = value_of(env, "SLURM_JOB_ID");
  recorder.set_job_extra(
      s.job_row, JobExtra::slurm,
      {{"job_id", slurm_job}, {"node", node}, {"gpus", value_of(env, "SLURM_JOB_GPUS")}});

  // The node's GPUs of the allocation, checked before the steps (the result goes to the job's
  // log once it is open) and after them, as a host job's are; a failed check drains the node.
  if (!job.simulate_gpus.empty())
    job.options.simulate_gpus = replace_all(job.simulate_gpus, "{node}", node);
  auto allocated = slurm_allocated_gpus(env);
  SlurmNodeGpus node_gpus({.options = &job.options,
                           .node = node,
                           .slurm_job = slurm_job,
                           .allocated = allocated ? *allocated : std::vector<int>{},
                           .scontrol = job.bin_dir.empty() ? std::string("scontrol")
                                                           : (job.bin_dir / "scontrol").string()});
  store::GpuLease lease;
  lease.holder = masker.mask(fmt::format("{}: {} / {} (run {}, Slurm job {})", job.repo.name,
                                         s.workflow.name, s.instance.name, s.run_id, slurm_job));
  lease.job_token = s.job_token;
  lease.run_id = s.run_id;
  BeforeJob before = node_gpus.before_job(lease);
  if (!allocated)
    before.lines.push_back(
        {"warning", fmt::format("the health of the job's GPUs is not checked: {}",
                                allocated.error().message)});

  JobSetup setup;
  setup.options = &job.options;
  setup.repo = &job.repo;
  setup.event = &job.event;
  setup.store = &masked_store;
  setup.recorder = &recorder;
  setup.observer = &observer;
  setup.masker = &masker;
  set_job_spec(setup, s);
  // The GPUs are Slurm's allocation on this node, as its environment names them.
  setup.gpu_env = slurm_gpu_environment(env);
  setup.gpus = node_gpus.gpus();
  if (!setup.gpus.empty()) {
    std::vector<std::string> uuids;
    for (const auto& gpu : setup.gpus) uuids.push_back(gpu.uuid);
    setup.gpu_env["KILN_GPU_UUIDS"] = fmt::format("{}", fmt::join(uuids, ","));
  }
  setup.before_job = [&before] { return before; };
  setup.after_job = [&node_gpus, &s] { return node_gpus.after_job(s.job_token); };
  setup.telemetry = job.options.gpu_telemetry;
  setup.kiln_dir = job.kiln_dir;
  setup.cancel = &cancel;
  observer.job_line(
      s.shown_key.empty() ? s.instance.key : s.shown_key, "kiln",
      fmt::format("kiln agent: Slurm job {} on {}, GPUs {}", value_of(env, "SLURM_JOB_ID"),
                  value_of(env, "SLURMD_NODENAME"), setup.gpu_env["KILN_GPUS"]));
  JobSummary summary = run_job(setup);
  KILN_TRY_VOID(
      write_json_file(job_file.parent_path() / "outcome.json", outcome_to_json(summary), 0600));
  return summary;
}

}  // namespace kiln::engine
