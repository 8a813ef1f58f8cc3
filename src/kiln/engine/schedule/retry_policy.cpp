#include "kiln/engine/schedule/retry_policy.h"

#include <set>

#include <fmt/format.h>

namespace kiln::engine {

std::optional<std::string> retry_reason(const WorkflowRunSummary& run,
                                        const std::map<store::FailureClass, int>& policy,
                                        RetryCounts& used) {
  if (run.conclusion != Conclusion::failure) return std::nullopt;
  std::set<store::FailureClass> classes;
  std::string reason;
  for (const auto& job : run.jobs) {
    if (job.conclusion != Conclusion::failure) continue;
    auto allowed = policy.find(job.failure_class);
    auto spent = used.find(job.failure_class);
    if (job.failure_class == store::FailureClass::code || allowed == policy.end() ||
        (spent != used.end() ? spent->second : 0) >= allowed->second)
      return std::nullopt;
    classes.insert(job.failure_class);
    if (!reason.empty()) reason += "; ";
    reason += fmt::format("{}: {}: {}", job.key, store::to_string(job.failure_class),
                          job.failure_evidence);
  }
  if (classes.empty()) return std::nullopt;
  for (auto failure_class : classes) ++used[failure_class];
  return reason;
}

}  // namespace kiln::engine
