#include "kiln/engine/execute/failure_class.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

StepFailure exited(int code) {
  return {.step_index = 1, .step = "train", .kind = "exit code", .exit_code = code};
}

FailureSignals failed_step(const StepFailure& failure) {
  FailureSignals s;
  s.conclusion = Conclusion::failure;
  s.stop = {StopReason::Kind::failed_step, "step 'train' failed"};
  s.failure = &failure;
  return s;
}

TEST(FailureClass, ASuccessOrASkipHasNone) {
  FailureSignals s;
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::none);
  s.conclusion = Conclusion::skipped;
  s.gpu_faults = {"GPU 0: Xid 79"};  // a fault does not make a skipped job failed
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::none);
}

TEST(FailureClass, AStepThatExitedNonZeroIsTheCodes) {
  auto failure = exited(2);
  auto verdict = classify_failure(failed_step(failure));
  EXPECT_EQ(verdict.failure_class, FailureClass::code);
  EXPECT_EQ(verdict.evidence, "step 'train' exited with code 2");
}

TEST(FailureClass, AGpuFaultExplainsAnyFailureAfterIt) {
  auto failure = exited(1);
  auto s = failed_step(failure);
  s.gpu_faults = {"GPU 0 (GPU-a): Xid 79: GPU has fallen off the bus", "GPU 1 (GPU-b): Xid 48"};
  auto verdict = classify_failure(s);
  EXPECT_EQ(verdict.failure_class, FailureClass::gpu_fault);
  EXPECT_EQ(verdict.evidence, "GPU 0 (GPU-a): Xid 79: GPU has fallen off the bus (and 1 more)");
  s.stop = {StopReason::Kind::timeout, "step 'train' timed out"};  // a hung GPU times out
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::gpu_fault);
}

TEST(FailureClass, SigkillWithAKernelOomRecordIsOom) {
  auto failure = exited(137);
  auto s = failed_step(failure);
  s.oom_kills = {"Memory cgroup out of memory: Killed process 1653 (python3)"};
  auto verdict = classify_failure(s);
  EXPECT_EQ(verdict.failure_class, FailureClass::oom);
  EXPECT_EQ(verdict.evidence,
            "step 'train' was killed (exit code 137); the kernel: Memory cgroup out of memory: "
            "Killed process 1653 (python3)");
}

TEST(FailureClass, SigkillWithoutKernelEvidenceIsNotOom) {
  auto failure = exited(137);  // `kill -9` by a person or a script
  EXPECT_EQ(classify_failure(failed_step(failure)).failure_class, FailureClass::code);
  auto other = exited(1);  // an OOM record elsewhere on the host does not explain exit code 1
  auto s = failed_step(other);
  s.oom_kills = {"Out of memory: Killed process 9 (java)"};
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::code);
}

TEST(FailureClass, TimeoutCancelledAndInfrastructure) {
  FailureSignals s;
  s.conclusion = Conclusion::failure;
  s.stop = {StopReason::Kind::timeout, "the job exceeded its maximum execution time of 1 minutes"};
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::timeout);
  EXPECT_EQ(classify_failure(s).evidence, s.stop.text);

  s.infrastructure = "the job's containers did not start: podman: no such image";
  EXPECT_EQ(classify_failure(s).failure_class, FailureClass::infra);
  EXPECT_EQ(classify_failure(s).evidence, s.infrastructure);

  FailureSignals thrown;
  thrown.conclusion = Conclusion::failure;
  thrown.stop = {StopReason::Kind::infrastructure, "infrastructure failure: cannot start a thread"};
  EXPECT_EQ(classify_failure(thrown).failure_class, FailureClass::infra);

  FailureSignals cancelled;
  cancelled.conclusion = Conclusion::cancelled;
  cancelled.stop = StopReason::interrupt();
  cancelled.gpu_faults = {"GPU 0: Xid 79"};  // nobody's fault: the job was stopped on purpose
  EXPECT_EQ(classify_failure(cancelled).failure_class, FailureClass::cancelled);
  EXPECT_EQ(classify_failure(cancelled).evidence, "cancelled (interrupt)");
}

TEST(FailureClass, MemoryHeldBySomeoneElseIsGpuBusy) {
  auto failure = exited(1);
  auto s = failed_step(failure);
  s.gpu_busy = {"GPU 0 (GPU-a): 70000 MiB held by pid 42 (python3), not a process of the job"};
  auto verdict = classify_failure(s);
  EXPECT_EQ(verdict.failure_class, FailureClass::gpu_busy);
  EXPECT_EQ(verdict.evidence, s.gpu_busy.front());
}

// A job green only because quarantined tests' failures were excused is `test`; a red job with
// them is not (what failed it was something else).
TEST(FailureClass, ExcusedQuarantinedTestsAreTestOnAGreenJob) {
  FailureSignals green;
  green.conclusion = Conclusion::success;
  EXPECT_EQ(classify_failure(green).failure_class, FailureClass::none);
  green.excused_tests = {"suite.a", "suite.b"};
  auto verdict = classify_failure(green);
  EXPECT_EQ(verdict.failure_class, FailureClass::test);
  EXPECT_EQ(verdict.evidence, "only quarantined tests failed: suite.a, suite.b");
  auto failure = exited(1);
  auto red = failed_step(failure);
  red.excused_tests = {"suite.a"};
  EXPECT_EQ(classify_failure(red).failure_class, FailureClass::code);
}

}  // namespace
}  // namespace kiln::engine
