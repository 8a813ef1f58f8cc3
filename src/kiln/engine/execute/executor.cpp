#include "kiln/engine/execute/executor.h"

namespace kiln::engine {

std::string_view to_string(StopReason::Kind kind) {
  switch (kind) {
    case StopReason::Kind::none:
      return "none";
    case StopReason::Kind::failed_step:
      return "failed step";
    case StopReason::Kind::timeout:
      return "timeout";
    case StopReason::Kind::cancelled:
      return "cancelled";
    case StopReason::Kind::fail_fast:
      return "fail-fast";
    case StopReason::Kind::concurrency:
      return "concurrency";
    case StopReason::Kind::gate:
      return "gate";
    case StopReason::Kind::infrastructure:
      return "infrastructure";
  }
  return "unknown";
}

// The job runner ends a job with a conclusion, the first failing step (StepFailure::kind) and a
// reason; that is where the kind is read from.
StopReason stop_reason_of(const JobSummary& summary) {
  using Kind = StopReason::Kind;
  switch (summary.conclusion) {
    case Conclusion::success:
    case Conclusion::skipped:
      return {};
    case Conclusion::cancelled:
      return {Kind::cancelled, summary.reason};
    case Conclusion::failure:
      break;
  }
  if (summary.reason.starts_with("infrastructure failure"))
    return {Kind::infrastructure, summary.reason};
  if (summary.failure) {
    const auto& kind = summary.failure->kind;
    if (kind == "timeout") return {Kind::timeout, summary.reason};
    if (kind == "gate" || kind == "gpu memory budget") return {Kind::gate, summary.reason};
    return {Kind::failed_step, summary.reason};
  }
  if (summary.reason.starts_with("the job exceeded its maximum execution time"))
    return {Kind::timeout, summary.reason};
  return {Kind::failed_step, summary.reason};
}

}  // namespace kiln::engine
