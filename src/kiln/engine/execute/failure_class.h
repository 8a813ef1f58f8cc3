#pragma once
// Why a failed job failed (docs/failures.md): one class and the line of evidence that says so,
// from what the job's end left behind. Pure: the signals are gathered by the job runner (the
// kernel's OOM records, the after-job GPU check, kiln's own failures), so every rule is tested
// without a process, a GPU or a kernel.

#include <string>
#include <vector>

#include "kiln/engine/engine.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/store/records.h"

namespace kiln::engine {

using store::FailureClass;

struct FailureSignals {
  Conclusion conclusion = Conclusion::success;
  StopReason stop;                       // stop_reason_of(the job's summary)
  const StepFailure* failure = nullptr;  // the first failing step, if one failed
  // The job's GPUs that reported a fault or vanished during or right after it (AfterJob).
  std::vector<std::string> gpu_faults;
  // Memory on the job's GPUs held by processes that were not the job's (AfterJob).
  std::vector<std::string> gpu_busy;
  // The kernel's OOM-kill records logged while the job ran (exec/kernel_oom.h).
  std::vector<std::string> oom_kills;
  // kiln or its machinery could not run the job: the container engine or the image pull
  // failed, kiln threw, no thread could be had. The text says what.
  std::string infrastructure;
  // The quarantined tests whose failures were all that failed a step of the job, which the job
  // runner then did not let fail the job (engine/collect/quarantine.h).
  std::vector<std::string> excused_tests;
};

struct FailureVerdict {
  FailureClass failure_class = FailureClass::none;
  std::string evidence;
};

// The class of a finished job: none for a skip, and for a success unless quarantined tests'
// failures were excused in it (test: green, with the warning as evidence); for a failure or a
// cancel, first match wins: cancelled; gpu-fault (a GPU fault explains any failure after it, a
// timeout included); infra; oom (a step killed by SIGKILL, exit code 137, while the kernel logged
// an OOM kill); gpu-busy (a failed job whose GPU memory was held by someone else); timeout; code
// (a step exited non-zero, a gate, anything else). A failed job is never `test`: a failure that
// quarantined tests explain does not fail it, and whatever else failed it is not theirs.
FailureVerdict classify_failure(const FailureSignals& signals);

}  // namespace kiln::engine
