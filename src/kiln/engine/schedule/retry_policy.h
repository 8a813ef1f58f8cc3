#pragma once
// kiln.yml's `retry:` (docs/failures.md): whether a failed run is run again automatically, and
// why. Only a run whose failed jobs all failed for classes with retries left is retried, so that
// no retry hides a failure of the code: one `code` failure among them, and the run stays red.

#include <map>
#include <optional>
#include <string>

#include "kiln/engine/engine.h"

namespace kiln::engine {

// How many retries each class has had in this run's attempts so far.
using RetryCounts = std::map<store::FailureClass, int>;

// The reason to run `run` again ("train: gpu-fault: GPU 0 (…): Xid 79 …"), counting the retry
// in `used`; nullopt when it is not to be retried: it did not fail, a failed job's class has no
// retries left (or none at all, as `code`), or it failed without a failed job (cancelled).
std::optional<std::string> retry_reason(const WorkflowRunSummary& run,
                                        const std::map<store::FailureClass, int>& policy,
                                        RetryCounts& used);

}  // namespace kiln::engine
