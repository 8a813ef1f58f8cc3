#include "kiln/engine/execute/slurm_agent.h"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/engine/clock.h"
#include "kiln/engine/execute/job_runner.h"
#include "kiln/engine/execute/slurm_job.h"
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
  recorder.set_job_extra(s.job_row, JobExtra::slurm,
                         {{"job_id", value_of(env, "SLURM_JOB_ID")},
                          {"node", value_of(env, "SLURMD_NODENAME")},
                          {"gpus", value_of(env, "SLURM_JOB_GPUS")}});

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
