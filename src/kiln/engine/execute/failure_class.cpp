#include "kiln/engine/execute/failure_class.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::engine {
namespace {

// 128 + SIGKILL: what a shell reports for a child the kernel killed.
constexpr int k_killed_exit_code = 137;

std::string first_and_count(const std::vector<std::string>& lines) {
  if (lines.size() == 1) return lines.front();
  return fmt::format("{} (and {} more)", lines.front(), lines.size() - 1);
}

bool killed_by_sigkill(const StepFailure* failure) {
  return failure && failure->kind == "exit code" && failure->exit_code == k_killed_exit_code;
}

}  // namespace

FailureVerdict classify_failure(const FailureSignals& s) {
  if (s.conclusion == Conclusion::success && !s.excused_tests.empty())
    return {FailureClass::test,
            fmt::format("only quarantined tests failed: {}", fmt::join(s.excused_tests, ", "))};
  if (s.conclusion == Conclusion::success || s.conclusion == Conclusion::skipped) return {};
  if (s.conclusion == Conclusion::cancelled)
    return {FailureClass::cancelled, s.stop.text.empty() ? "cancelled" : s.stop.text};
  if (!s.gpu_faults.empty()) return {FailureClass::gpu_fault, first_and_count(s.gpu_faults)};
  if (!s.infrastructure.empty()) return {FailureClass::infra, s.infrastructure};
  if (s.stop.kind == StopReason::Kind::infrastructure) return {FailureClass::infra, s.stop.text};
  if (!s.oom_kills.empty() && killed_by_sigkill(s.failure))
    return {FailureClass::oom,
            fmt::format("step '{}' was killed (exit code {}); the kernel: {}", s.failure->step,
                        s.failure->exit_code, first_and_count(s.oom_kills))};
  if (!s.gpu_busy.empty()) return {FailureClass::gpu_busy, first_and_count(s.gpu_busy)};
  if (s.stop.kind == StopReason::Kind::timeout) return {FailureClass::timeout, s.stop.text};
  if (s.failure && s.failure->kind == "exit code")
    return {FailureClass::code,
            fmt::format("step '{}' exited with code {}", s.failure->step, s.failure->exit_code)};
  return {FailureClass::code, s.stop.text.empty() ? "the job failed" : s.stop.text};
}

}  // namespace kiln::engine
