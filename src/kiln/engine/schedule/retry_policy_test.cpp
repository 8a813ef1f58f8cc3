#include "kiln/engine/schedule/retry_policy.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

using store::FailureClass;

JobSummary job(const std::string& key, Conclusion conclusion, FailureClass failure_class,
               const std::string& evidence = "") {
  JobSummary summary;
  summary.key = key;
  summary.conclusion = conclusion;
  summary.failure_class = failure_class;
  summary.failure_evidence = evidence;
  return summary;
}

WorkflowRunSummary failed_run(std::vector<JobSummary> jobs) {
  WorkflowRunSummary run;
  run.conclusion = Conclusion::failure;
  run.jobs = std::move(jobs);
  return run;
}

const std::map<FailureClass, int> k_defaults = {{FailureClass::gpu_fault, 1},
                                                {FailureClass::infra, 1}};

TEST(RetryPolicy, AGpuFaultIsRetriedOnceByDefault) {
  auto run =
      failed_run({job("build", Conclusion::success, FailureClass::none),
                  job("train", Conclusion::failure, FailureClass::gpu_fault, "GPU 0: Xid 79"),
                  job("eval", Conclusion::cancelled, FailureClass::cancelled)});
  RetryCounts used;
  EXPECT_EQ(retry_reason(run, k_defaults, used), "train: gpu-fault: GPU 0: Xid 79");
  EXPECT_EQ(used[FailureClass::gpu_fault], 1);
  EXPECT_EQ(retry_reason(run, k_defaults, used), std::nullopt);  // its one retry is spent
}

TEST(RetryPolicy, CodeIsNeverRetriedNorHiddenAmongInfrastructureFailures) {
  RetryCounts used;
  std::map<FailureClass, int> everything = {{FailureClass::code, 5}, {FailureClass::infra, 5}};
  EXPECT_EQ(retry_reason(failed_run({job("t", Conclusion::failure, FailureClass::code)}),
                         everything, used),
            std::nullopt);
  EXPECT_EQ(retry_reason(failed_run({job("a", Conclusion::failure, FailureClass::infra),
                                     job("b", Conclusion::failure, FailureClass::code)}),
                         everything, used),
            std::nullopt);
  EXPECT_TRUE(used.empty());
}

TEST(RetryPolicy, ClassesWithoutRetriesAndRunsThatDidNotFail) {
  RetryCounts used;
  EXPECT_EQ(retry_reason(failed_run({job("t", Conclusion::failure, FailureClass::oom)}), k_defaults,
                         used),
            std::nullopt);
  std::map<FailureClass, int> oom_twice = {{FailureClass::oom, 2}};
  auto oom = failed_run({job("t", Conclusion::failure, FailureClass::oom, "killed")});
  EXPECT_EQ(retry_reason(oom, oom_twice, used), "t: oom: killed");
  EXPECT_EQ(retry_reason(oom, oom_twice, used), "t: oom: killed");
  EXPECT_EQ(retry_reason(oom, oom_twice, used), std::nullopt);
  WorkflowRunSummary cancelled;
  cancelled.conclusion = Conclusion::cancelled;
  cancelled.jobs = {job("t", Conclusion::cancelled, FailureClass::cancelled)};
  EXPECT_EQ(retry_reason(cancelled, k_defaults, used), std::nullopt);
}

}  // namespace
}  // namespace kiln::engine
