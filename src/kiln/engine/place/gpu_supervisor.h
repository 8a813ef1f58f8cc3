#pragma once
// The engine's side of the GPU layer: the host's inventory, the leases every kiln process of the
// host shares through the host store, and the health rules of gpu/health.h applied before and
// after each job (quarantine, leftover processes, memory that must come back).
//
// Thread-safe (mutex_, checked by -Wthread-safety): the scheduler's driver places jobs, job
// threads call after_job.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/thread_annotations.h"
#include "kiln/engine/engine.h"
#include "kiln/gpu/gpu.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/store/store.h"

namespace kiln::engine {

// What `kiln gpus` shows for one GPU.
struct GpuState {
  enum class Kind { free, leased, busy, quarantined } kind = Kind::free;
  std::string detail;  // the holder, the busy reason or the quarantine reason
  std::int64_t since = 0;
  // A leased GPU's lease: its run and job token name the holder (the API links to the run).
  std::optional<store::GpuLease> lease = std::nullopt;
};

// "free", "leased", "busy", "quarantined": the names `kiln gpus --json` and `kiln metrics` use.
std::string_view gpu_state_name(GpuState::Kind kind);

// The GPUs as one scheduling pass sees them: a copy, so that job threads refreshing the live
// state do not change it under the pass.
struct GpuSnapshot {
  gpu::Inventory inventory;
  std::set<int> unavailable;
};

// A line for a job's log: kind "kiln" or "warning" (RunObserver::job_line's kinds).
struct JobLogLine {
  std::string kind;
  std::string text;
};

// What the after-job check found (GpuSupervisor::after_job): the lines for the job's log, and the
// evidence a failed job's class is read from (engine/execute/failure_class.h).
struct AfterJob {
  std::vector<JobLogLine> lines;
  // The job's GPUs that reported a fault (Xid, ECC, RAS) or were no longer listed by the
  // driver right after it, each quarantined: "GPU 0 (GPU-…): Xid 79 …".
  std::vector<std::string> gpu_faults;
  // Memory on the job's GPUs held by processes that were not the job's.
  std::vector<std::string> gpu_busy;
  // Every GPU the check quarantined (a fault, or memory that did not come back), with why:
  // "GPU 0 (GPU-…): memory did not come back …". A Slurm node with one is drained.
  std::vector<std::string> quarantined;
};

// What a check before the job's steps found (JobSetup::before_job): the lines for the job's log,
// and, when `problem` is set, why the job must not run (it fails as an infrastructure failure).
struct BeforeJob {
  std::vector<JobLogLine> lines;
  std::string problem;
};

class GpuSupervisor {
 public:
  explicit GpuSupervisor(const RunOptions& options) : options_(options) {}

  // The inventory, discovered (and the host store opened) on first use. Errors: the provider
  // failing or missing its deadline, the host store failing.
  Result<const gpu::Inventory*> inventory() EXCLUDES(mutex_);

  // The inventory and the GPUs that may not take a job now: leased by any kiln process of this
  // host, quarantined, or busy with memory kiln did not account for. Refreshes the provider's live
  // state (at most every 500 ms unless `fresh`), reclaims leases of dead kiln processes, kills
  // processes of finished kiln jobs still on a GPU, quarantines faulty GPUs and returns quarantined
  // GPUs that pass their re-check to service. One line per such event is appended to `notes`.
  // `observe` (for `kiln gpus`): look only; kill nothing, change no quarantine.
  enum class Mode { enforce, observe };
  Result<GpuSnapshot> snapshot(std::vector<std::string>& notes, bool fresh = false,
                               Mode mode = Mode::enforce) EXCLUDES(mutex_);

  // Leases `gpus` to a job (all or none); false when another process took one of them since
  // the last snapshot(). Remembers each GPU's memory in use now as the job's baseline.
  Result<bool> lease(const std::vector<int>& gpus, const store::GpuLease& job) EXCLUDES(mutex_);

  // After the job with this token ended: quarantines its GPUs that report a fault (or vanished),
  // kills its processes still on the others (named in the returned lines), waits up to the grace
  // period for each GPU's memory to come back to its baseline, quarantines the GPUs whose memory
  // does not, and releases the job's leases.
  AfterJob after_job(const std::string& token) EXCLUDES(mutex_);

  // What `kiln gpus` shows as the holder of the job's GPUs (a failed job held for debugging).
  Status set_holder(const std::string& token, const std::string& holder) EXCLUDES(mutex_);

  // A telemetry sampler of the provider that answered (null when none did): the NVML, amdgpu
  // sysfs or simulated sampler (gpu/telemetry.h).
  std::unique_ptr<gpu::GpuSampler> make_sampler() EXCLUDES(mutex_);

  // For `kiln gpus`: each GPU's state, by index, freshly read (Mode::observe).
  Result<std::vector<GpuState>> states() EXCLUDES(mutex_);

  // `kiln gpus --release`: returns a quarantined GPU (index or UUID) to service. not_found for
  // an unknown GPU; false when it was not quarantined.
  Result<bool> release(const std::string& gpu) EXCLUDES(mutex_);

 private:
  Status start_locked() REQUIRES(mutex_);
  Status refresh_locked(bool fresh) REQUIRES(mutex_);
  int index_of_locked(const std::string& uuid) const REQUIRES(mutex_);

  const RunOptions& options_;
  mutable kiln::Mutex mutex_;
  std::unique_ptr<gpu::GpuProvider> provider_ GUARDED_BY(mutex_);
  std::unique_ptr<store::Store> host_ GUARDED_BY(mutex_);
  std::optional<gpu::Inventory> inventory_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point refreshed_ GUARDED_BY(mutex_){};
  struct Held {
    std::vector<int> gpus;
    std::vector<std::uint64_t> baseline_mib;
    std::string holder;
  };
  std::map<std::string, Held> held_ GUARDED_BY(mutex_);  // by job token: this process's leases
};

}  // namespace kiln::engine
