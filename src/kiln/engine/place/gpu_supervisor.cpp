#include "kiln/engine/place/gpu_supervisor.h"

#include <signal.h>

#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/exec/process_tracker.h"
#include "kiln/gpu/discover.h"
#include "kiln/gpu/health.h"
#include "kiln/store/host_store.h"
#include "kiln/store/process_identity.h"

namespace kiln::engine {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto k_refresh_interval = 500ms;
constexpr auto k_after_job_poll = 200ms;

std::string gpu_name(const gpu::GpuInfo& gpu) {
  return fmt::format("GPU {} ({})", gpu.index, gpu.uuid);
}

}  // namespace

std::string_view gpu_state_name(GpuState::Kind kind) {
  switch (kind) {
    case GpuState::Kind::free:
      return "free";
    case GpuState::Kind::leased:
      return "leased";
    case GpuState::Kind::busy:
      return "busy";
    case GpuState::Kind::quarantined:
      return "quarantined";
  }
  return "free";
}

Status GpuSupervisor::start_locked() {
  if (inventory_) return {};
  gpu::DiscoverOptions discover;
  discover.simulate = options_.simulate_gpus;
  discover.sysfs_root = options_.gpu_sysfs_root;
  discover.deadline = options_.gpu_health.provider_deadline;
  KILN_TRY(auto found, gpu::discover_provider(discover));
  auto host = store::open_host_store(options_.host_store);
  if (!host) {
    auto error = host.error();
    error.message = fmt::format("the host store for GPU leases: {}", error.message);
    return std::unexpected(std::move(error));
  }
  host_ = std::move(*host);
  provider_ = std::move(found.provider);
  inventory_ = std::move(found.inventory);
  refreshed_ = Clock::now();
  return {};
}

Result<const gpu::Inventory*> GpuSupervisor::inventory() {
  kiln::MutexLock lock(mutex_);
  KILN_TRY_VOID(start_locked());
  return &*inventory_;
}

int GpuSupervisor::index_of_locked(const std::string& uuid) const {
  for (const auto& gpu : inventory_->gpus)
    if (gpu.uuid == uuid) return gpu.index;
  return -1;
}

// Only the live fields change; the GPUs keep their indexes. A GPU the provider no longer
// reports (fallen off the bus) gets a fault.
Status GpuSupervisor::refresh_locked(bool fresh) {
  KILN_TRY_VOID(start_locked());
  if (!provider_) return {};
  if (!fresh && Clock::now() - refreshed_ < k_refresh_interval) return {};
  auto now = provider_->inventory(options_.gpu_health.provider_deadline);
  if (!now) {
    auto error = now.error();
    error.message =
        fmt::format("the GPU provider ({}) failed: {}", provider_->name(), error.message);
    return std::unexpected(std::move(error));
  }
  for (auto& gpu : inventory_->gpus) {
    const gpu::GpuInfo* live = nullptr;
    for (const auto& candidate : now->gpus)
      if (candidate.uuid == gpu.uuid) live = &candidate;
    if (!live) {
      gpu.faults = {"no longer reported by the driver"};
      gpu.processes.clear();
      continue;
    }
    gpu.memory_used_mib = live->memory_used_mib;
    gpu.processes = live->processes;
    gpu.faults = live->faults;
  }
  refreshed_ = Clock::now();
  return {};
}

Result<GpuSnapshot> GpuSupervisor::snapshot(std::vector<std::string>& notes, bool fresh,
                                            Mode mode) {
  const bool enforce = mode == Mode::enforce;
  kiln::MutexLock lock(mutex_);
  KILN_TRY_VOID(refresh_locked(fresh));
  std::set<int> out;
  std::vector<store::GpuLease> reclaimed;
  if (enforce) {
    KILN_TRY(reclaimed, host_->reclaim_gpu_leases());
  }
  for (const auto& lease : reclaimed)
    notes.push_back(fmt::format("reclaimed the lease on GPU {} of {}: its kiln process {} is gone",
                                lease.gpu_uuid, lease.holder, lease.owner.pid));
  KILN_TRY(auto leases, host_->list_gpu_leases());
  std::set<std::string> live_tokens;
  for (const auto& lease : leases) {
    live_tokens.insert(lease.job_token);
    if (int index = index_of_locked(lease.gpu_uuid); index >= 0) out.insert(index);
  }
  KILN_TRY(auto quarantined, host_->list_gpu_quarantine());
  std::map<std::string, const store::GpuQuarantine*> quarantine_of;
  for (const auto& record : quarantined) quarantine_of[record.gpu_uuid] = &record;

  for (const auto& gpu : inventory_->gpus) {
    // A process of a kiln job that no longer holds a lease escaped its job's clean-up (it
    // cleared its environment's process group, or its kiln was killed): it goes now.
    for (const auto& process : gpu.processes) {
      auto token = exec::job_token_of(process.pid);
      if (!enforce || token.empty() || live_tokens.contains(token)) continue;
      auto description = exec::describe_process(process.pid);
      if (::kill(process.pid, SIGKILL) == 0)
        notes.push_back(fmt::format("killed {} of a finished job ({}), which held {} MiB on {}",
                                    description, token, process.used_mib, gpu_name(gpu)));
    }
    if (auto it = quarantine_of.find(gpu.uuid); it != quarantine_of.end()) {
      if (out.contains(gpu.index)) continue;  // leased: re-checked after its job
      auto problem = gpu::recheck_problem(gpu, it->second->memory_limit_mib, options_.gpu_health);
      if (problem || !enforce || it->second->manual_release) {
        out.insert(gpu.index);
        continue;
      }
      KILN_TRY(bool released, host_->release_gpu_quarantine(gpu.uuid));
      if (!released) continue;  // another kiln process released it first
      notes.push_back(fmt::format("{} passed its re-check and is back in service (was: {})",
                                  gpu_name(gpu), it->second->reason));
      continue;
    }
    auto check = gpu::check_before_job(gpu, options_.gpu_health);
    if (enforce && check.readiness == gpu::Readiness::faulty && !out.contains(gpu.index)) {
      KILN_TRY_VOID(host_->quarantine_gpu({gpu.uuid, check.reason, 0, 0, true}));
      notes.push_back(fmt::format("{} quarantined: {} (`kiln gpus --release {}` once it is fixed)",
                                  gpu_name(gpu), check.reason, gpu.index));
    }
    if (check.readiness != gpu::Readiness::ready) out.insert(gpu.index);
  }
  return GpuSnapshot{*inventory_, std::move(out)};
}

Result<bool> GpuSupervisor::lease(const std::vector<int>& gpus, const store::GpuLease& job) {
  kiln::MutexLock lock(mutex_);
  KILN_TRY_VOID(start_locked());
  std::vector<store::GpuLease> leases;
  Held held;
  held.holder = job.holder;
  for (int index : gpus) {
    auto lease = job;
    lease.gpu_uuid = inventory_->gpus.at(static_cast<std::size_t>(index)).uuid;
    leases.push_back(std::move(lease));
    held.gpus.push_back(index);
    held.baseline_mib.push_back(
        inventory_->gpus.at(static_cast<std::size_t>(index)).memory_used_mib);
  }
  KILN_TRY(bool granted, host_->acquire_gpu_leases(leases));
  if (granted) held_[job.job_token] = std::move(held);
  return granted;
}

Status GpuSupervisor::set_holder(const std::string& token, const std::string& holder) {
  kiln::MutexLock lock(mutex_);
  if (!host_) return {};
  return host_->set_gpu_lease_holder(token, holder);
}

std::unique_ptr<gpu::GpuSampler> GpuSupervisor::make_sampler() {
  kiln::MutexLock lock(mutex_);
  if (!provider_) return nullptr;
  auto name = provider_->name();
  if (name == "simulated" && options_.simulate_gpus)
    return gpu::make_simulated_sampler(*options_.simulate_gpus);
  if (name == "amdgpu-sysfs")
    return gpu::make_amd_sysfs_sampler(options_.gpu_sysfs_root.value_or("/"));
  if (name == "nvml") return gpu::make_nvml_sampler(gpu::k_nvml_library);
  return nullptr;
}

AfterJob GpuSupervisor::after_job(const std::string& token) {
  AfterJob found;
  auto& lines = found.lines;
  kiln::MutexLock lock(mutex_);
  auto it = held_.find(token);
  if (it == held_.end()) return found;
  Held held = it->second;
  const auto& policy = options_.gpu_health;
  const auto give_up = Clock::now() + policy.memory_grace;
  std::set<int> pending(held.gpus.begin(), held.gpus.end());
  std::set<int> killed;
  std::string failure;
  bool first = true;
  while (!pending.empty()) {
    if (auto refreshed = refresh_locked(true); !refreshed) {
      failure = refreshed.error().message;
      break;
    }
    for (std::size_t i = 0; i < held.gpus.size(); ++i) {
      int index = held.gpus[i];
      if (!pending.contains(index)) continue;
      const auto& gpu = inventory_->gpus.at(static_cast<std::size_t>(index));
      // A fault seen right after the job happened during it (or it was left so): the GPU, not
      // its memory, is what is wrong; waiting for the memory of a dead GPU tells nothing.
      if (first && !gpu.faults.empty()) {
        auto reason = fmt::format("{} (found after {})", fmt::join(gpu.faults, "; "), held.holder);
        if (auto quarantined = host_->quarantine_gpu({gpu.uuid, reason, 0, 0, true}); !quarantined)
          lines.push_back({"warning", fmt::format("cannot quarantine {}: {}", gpu_name(gpu),
                                                  quarantined.error().to_string())});
        lines.push_back(
            {"warning",
             fmt::format("{} quarantined: {} (`kiln gpus --release {}` once it is fixed)",
                         gpu_name(gpu), reason, gpu.index)});
        found.gpu_faults.push_back(
            fmt::format("{}: {}", gpu_name(gpu), fmt::join(gpu.faults, "; ")));
        found.quarantined.push_back(found.gpu_faults.back());
        pending.erase(index);
        continue;
      }
      if (first)
        for (const auto& process : gpu.processes)
          if (exec::job_token_of(process.pid) != token && process.used_mib > 0)
            found.gpu_busy.push_back(fmt::format("{}: {} MiB held by {}, not a process of the job",
                                                 gpu_name(gpu), process.used_mib,
                                                 exec::describe_process(process.pid)));
      for (const auto& process : gpu.processes) {
        if (killed.contains(process.pid) || exec::job_token_of(process.pid) != token) continue;
        auto description = exec::describe_process(process.pid);
        if (::kill(process.pid, SIGKILL) == 0) {
          killed.insert(process.pid);
          lines.push_back(
              {"kiln", fmt::format("Killed {}, still holding {} MiB on {} after the job",
                                   description, process.used_mib, gpu_name(gpu))});
        }
      }
      if (gpu.memory_used_mib <= gpu::memory_limit_after_job(gpu, held.baseline_mib[i], policy))
        pending.erase(index);
    }
    first = false;
    if (pending.empty() || Clock::now() >= give_up) break;
    lock.unlock();
    std::this_thread::sleep_for(k_after_job_poll);
    lock.lock();
  }
  auto seconds = std::chrono::duration<double>(policy.memory_grace).count();
  for (std::size_t i = 0; i < held.gpus.size(); ++i) {
    int index = held.gpus[i];
    if (!pending.contains(index)) continue;
    const auto& gpu = inventory_->gpus.at(static_cast<std::size_t>(index));
    auto limit = gpu::memory_limit_after_job(gpu, held.baseline_mib[i], policy);
    std::string reason;
    if (!failure.empty()) {
      reason = fmt::format("after {}: {}", held.holder, failure);
    } else {
      reason = fmt::format(
          "memory did not come back after {}: {} MiB in use {:g} s after it ended, {} MiB "
          "before it",
          held.holder, gpu.memory_used_mib, seconds, held.baseline_mib[i]);
      for (const auto& process : gpu.processes)
        reason += fmt::format("; held by {} ({} MiB)", exec::describe_process(process.pid),
                              process.used_mib);
    }
    if (auto quarantined = host_->quarantine_gpu({gpu.uuid, reason, 0, limit, false}); !quarantined)
      lines.push_back({"warning", fmt::format("cannot quarantine {}: {}", gpu_name(gpu),
                                              quarantined.error().to_string())});
    lines.push_back({"warning", fmt::format("{} quarantined: {}", gpu_name(gpu), reason)});
    found.quarantined.push_back(fmt::format("{}: {}", gpu_name(gpu), reason));
  }
  if (auto released = host_->release_gpu_leases(token); !released)
    lines.push_back({"warning", fmt::format("cannot release the GPU leases: {}",
                                            released.error().to_string())});
  held_.erase(token);
  return found;
}

Result<std::vector<GpuState>> GpuSupervisor::states() {
  std::vector<std::string> ignored;
  if (auto snapshot = this->snapshot(ignored, true, Mode::observe); !snapshot)
    return std::unexpected(snapshot.error());
  kiln::MutexLock lock(mutex_);
  std::vector<GpuState> states(inventory_->gpus.size());
  KILN_TRY(auto leases, host_->list_gpu_leases());
  KILN_TRY(auto quarantined, host_->list_gpu_quarantine());
  for (const auto& gpu : inventory_->gpus) {
    auto& state = states[static_cast<std::size_t>(gpu.index)];
    auto check = gpu::check_before_job(gpu, options_.gpu_health);
    if (check.readiness == gpu::Readiness::busy)
      state = {GpuState::Kind::busy, check.reason, 0, std::nullopt};
    if (check.readiness == gpu::Readiness::faulty)  // quarantined at the next scheduling pass
      state = {GpuState::Kind::quarantined, check.reason, 0, std::nullopt};
  }
  for (const auto& record : quarantined)
    if (int index = index_of_locked(record.gpu_uuid); index >= 0)
      states[static_cast<std::size_t>(index)] = {GpuState::Kind::quarantined, record.reason,
                                                 record.since, std::nullopt};
  for (const auto& lease : leases) {
    int index = index_of_locked(lease.gpu_uuid);
    if (index < 0) continue;
    // A lease whose kiln process is gone (kill -9, OOM killer) holds nothing: the GPU is free,
    // and the next run reclaims the row. Said with whose it was, not shown as leased until then.
    if (!store::is_process_alive(lease.owner)) {
      states[static_cast<std::size_t>(index)] = {
          GpuState::Kind::free,
          fmt::format("the lease of {} is void: its kiln process (pid {}) is gone", lease.holder,
                      lease.owner.pid),
          lease.granted_at, std::nullopt};
      continue;
    }
    states[static_cast<std::size_t>(index)] = {GpuState::Kind::leased, lease.holder,
                                               lease.granted_at, lease};
  }
  return states;
}

Result<bool> GpuSupervisor::release(const std::string& gpu) {
  kiln::MutexLock lock(mutex_);
  KILN_TRY_VOID(start_locked());
  for (const auto& info : inventory_->gpus) {
    if (info.uuid == gpu || std::to_string(info.index) == gpu)
      return host_->release_gpu_quarantine(info.uuid);
  }
  return fail(ErrorCode::not_found,
              "no GPU '{}' on this host (give its index or UUID; see kiln gpus)", gpu);
}

}  // namespace kiln::engine
