#include "kiln/gpu/health.h"

#include <charconv>

namespace kiln::gpu {

Result<MemoryAmount> parse_memory_amount(std::string_view text) {
  auto bad = [&] {
    return fail(ErrorCode::invalid_input, "'{}' is not an amount of GPU memory (e.g. 512M, 2G, 5%)",
                text);
  };
  if (text.size() < 2) return bad();
  char unit = text.back();
  auto digits = text.substr(0, text.size() - 1);
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return bad();
  MemoryAmount amount;
  switch (unit) {
    case '%':
      if (value > 100) return bad();
      amount.percent = value;
      return amount;
    case 'M':
    case 'm':
      amount.mib = static_cast<std::uint64_t>(value);
      return amount;
    case 'G':
    case 'g':
      amount.mib = static_cast<std::uint64_t>(value * 1024);
      return amount;
    default:
      return bad();
  }
}

Check check_before_job(const GpuInfo& gpu, const HealthPolicy& policy) {
  if (!gpu.faults.empty()) {
    std::string reason = "fault: " + gpu.faults.front();
    for (std::size_t i = 1; i < gpu.faults.size(); ++i) reason += "; " + gpu.faults[i];
    return {Readiness::faulty, reason};
  }
  auto limit = policy.max_used_before_job.of(gpu.memory_total_mib);
  if (gpu.memory_used_mib > limit)
    return {Readiness::busy, fmt::format("{} MiB of its memory in use (more than {} MiB) by "
                                         "processes kiln did not start",
                                         gpu.memory_used_mib, limit)};
  return {};
}

std::uint64_t memory_limit_after_job(const GpuInfo& gpu, std::uint64_t baseline_mib,
                                     const HealthPolicy& policy) {
  return baseline_mib + policy.memory_tolerance.of(gpu.memory_total_mib);
}

std::optional<std::string> recheck_problem(const GpuInfo& gpu, std::uint64_t memory_limit_mib,
                                           const HealthPolicy& policy) {
  auto check = check_before_job(gpu, policy);
  if (check.readiness == Readiness::faulty) return check.reason;
  auto limit =
      memory_limit_mib > 0 ? memory_limit_mib : policy.max_used_before_job.of(gpu.memory_total_mib);
  if (gpu.memory_used_mib > limit)
    return fmt::format("{} MiB of memory still in use (at most {} MiB to pass)",
                       gpu.memory_used_mib, limit);
  return std::nullopt;
}

}  // namespace kiln::gpu
