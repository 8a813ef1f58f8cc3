#pragma once
// Per-job control groups for host jobs (kiln.yml jobs.limits, docs/configuration.md): a job's
// step processes run in a cgroup of their own, below kiln's own cgroup, with a memory limit (its
// processes are OOM-killed past it, swap included), a pids limit (fork fails past it) and a CPU
// quota. Membership is also clean-up: at the job's end every process still in the cgroup is
// killed, whatever it did to its parentage, session or environment.
//
// Both layouts Linux hosts have: cgroup v2 (one hierarchy; the controllers are enabled in kiln's
// cgroup's cgroup.subtree_control, which the kernel allows only where that cgroup holds no
// process of its own, so kiln must run in a cgroup of its own, e.g. a systemd service with
// Delegate=yes, or the root) and v1 or hybrid (a hierarchy per controller: memory, pids, cpu; the
// job cgroup is made below kiln's cgroup in each). Job cgroups are named
// kiln-job-PID-START-N after the kiln process that made them, so that one left by a kiln killed
// with SIGKILL is removed by the next kiln that makes one (once empty).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::core {

struct CgroupLimits {
  std::uint64_t memory_bytes = 0;  // 0: no limit
  std::uint64_t pids = 0;          // 0: no limit
  double cpus = 0;                 // CPUs' worth of time per period; 0: no limit
  bool any() const { return memory_bytes != 0 || pids != 0 || cpus != 0; }
  std::string describe() const;  // "memory 64 MiB, pids 32, cpus 1.5"
};

// Where this host lets kiln make job cgroups: the directories below which each job cgroup is
// made (one for v2; memory, pids and cpu for v1). `why_not` says why none, when none.
struct CgroupHost {
  enum class Layout { none, v2, v1 } layout = Layout::none;
  std::filesystem::path mount;                 // /sys/fs/cgroup
  std::vector<std::filesystem::path> parents;  // v2: one; v1: memory, pids, cpu
  std::string why_not;
};

// Looks at `mount` (normally /sys/fs/cgroup) and `self_cgroup` (the text of /proc/self/cgroup).
CgroupHost find_cgroup_host(const std::filesystem::path& mount = "/sys/fs/cgroup");
CgroupHost find_cgroup_host(const std::filesystem::path& mount, std::string_view self_cgroup);

class JobCgroup {
 public:
  // Makes the job's cgroup (in every hierarchy of `host`) and writes `limits`; removes the empty
  // cgroups that dead kiln processes left. An error says which file could not be written.
  static Result<JobCgroup> create(const CgroupHost& host, const CgroupLimits& limits);
  JobCgroup(JobCgroup&&) noexcept;
  JobCgroup& operator=(JobCgroup&&) noexcept;
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  ~JobCgroup();  // kill_all() and remove() if not done

  // The job cgroup's directories: a process joins by writing its pid to DIR/cgroup.procs in each
  // (the step holder does so before it forks the step: exec/subreaper.h).
  const std::vector<std::filesystem::path>& directories() const { return directories_; }
  std::vector<pid_t> members() const;
  // OOM kills in the cgroup so far (v2 memory.events oom_kill, v1 memory.oom_control oom_kill).
  std::uint64_t oom_kills() const;
  // SIGKILLs every member until none is left (or `patience` passed); "pid 12 (sleep)" each.
  std::vector<std::string> kill_all(std::chrono::milliseconds patience = std::chrono::seconds(5));
  // Removes the cgroups (they must be empty); done once.
  void remove();

 private:
  JobCgroup() = default;
  CgroupHost::Layout layout_ = CgroupHost::Layout::none;
  std::vector<std::filesystem::path> directories_;
  bool removed_ = true;
};

}  // namespace kiln::core
