#pragma once
// GPU health rules (issue "GPU layer", item Health): pure decisions over what a provider reports,
// so they are tested without a GPU. The engine (engine/gpu_supervisor.h) applies them: it
// refreshes the inventory, asks these functions, and records quarantine in the store.
//
//   before a job   a fault (ECC, RAS, Xid) quarantines the GPU; more memory in use than
//                  max_used_before_job (someone outside kiln uses it) makes it busy: jobs wait.
//   after a job    the memory in use must come back to what it was when the job got the GPU
//                  (plus a tolerance) within the grace period; else the GPU is quarantined.
//   re-check       a quarantined GPU returns to service once it has no fault, no leftover
//                  process, and its memory is back under the limit its quarantine recorded.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "kiln/core/result.h"
#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

// An amount of GPU memory as the host config writes it: "2G", "512M", "5%" (of each GPU's total).
struct MemoryAmount {
  std::uint64_t mib = 0;
  double percent = 0;  // used when > 0
  std::uint64_t of(std::uint64_t total_mib) const {
    return percent > 0 ? static_cast<std::uint64_t>(static_cast<double>(total_mib) * percent / 100)
                       : mib;
  }
};
// "2G", "512M", "1.5G", "5%"; errors name the text.
Result<MemoryAmount> parse_memory_amount(std::string_view text);

struct HealthPolicy {
  MemoryAmount max_used_before_job{0, 5};  // busy above this (default 5% of the GPU)
  MemoryAmount memory_tolerance{512, 0};   // after a job: baseline + this still counts as back
  std::chrono::milliseconds memory_grace{10000};       // how long memory may take to come back
  std::chrono::milliseconds provider_deadline{10000};  // a provider slower than this is wedged
};

enum class Readiness { ready, busy, faulty };
struct Check {
  Readiness readiness = Readiness::ready;
  std::string reason;  // empty when ready
};

// Whether the GPU may take a job now.
Check check_before_job(const GpuInfo& gpu, const HealthPolicy& policy);

// The most memory the GPU may have in use after a job that got it with `baseline_mib` in use.
std::uint64_t memory_limit_after_job(const GpuInfo& gpu, std::uint64_t baseline_mib,
                                     const HealthPolicy& policy);

// Whether a quarantined GPU may return to service. `memory_limit_mib` is the quarantine's (0: the
// before-job limit). The reason when it may not.
std::optional<std::string> recheck_problem(const GpuInfo& gpu, std::uint64_t memory_limit_mib,
                                           const HealthPolicy& policy);

}  // namespace kiln::gpu
