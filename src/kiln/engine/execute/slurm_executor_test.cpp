#include "kiln/engine/execute/slurm_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/engine/execute/slurm_agent.h"
#include "kiln/engine/execute/slurm_job.h"

namespace kiln::engine {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

JobSpec gpu_job(int count, const std::string& model = "") {
  JobSpec spec;
  spec.run_id = 7;
  spec.job_row = 42;
  spec.instance.key = "train (a, 1)";
  spec.gpu_request.count = count;
  spec.gpu_request.model = model;
  return spec;
}

TEST(SlurmExecutor, SbatchArgumentsFromThePoolAndTheRequest) {
  config::SlurmPool pool;
  pool.partition = "gpu";
  pool.account = "ml";
  pool.qos = "high";
  pool.exclusive = true;
  pool.gres_types = {{"h100", "h100_80g"}};
  pool.sbatch_args = {"--constraint=ib"};
  auto args = sbatch_arguments(pool, gpu_job(2, "h100"), 30);
  ASSERT_TRUE(args) << args.error().to_string();
  EXPECT_EQ(
      *args,
      (std::vector<std::string>{
          "--parsable", "--gres=gpu:h100_80g:2", "--time=35", "--partition=gpu", "--account=ml",
          "--qos=high", "--exclusive", "--no-requeue", "--job-name=kiln-7-train__a__1_",
          "--comment=kiln run 7 attempt 1 job train (a, 1) (row 42)", "--constraint=ib"}));
  // Without a model: any GPU type; without GPUs: no --gres.
  auto one = sbatch_arguments(pool, gpu_job(1), 10);
  ASSERT_TRUE(one);
  EXPECT_THAT(*one, Contains("--gres=gpu:1"));
  auto none = sbatch_arguments(pool, gpu_job(0), 10);
  ASSERT_TRUE(none);
  for (const auto& arg : *none) EXPECT_FALSE(arg.starts_with("--gres")) << arg;
}

TEST(SlurmExecutor, GpuLabelsBecomeAConstraint) {
  config::SlurmPool pool;
  gpu::GpuRequest hopper;
  hopper.arch = "sm_90";
  pool.features = {{.label = "gpu-arch:sm_90", .means = hopper, .feature = "hopper"}};
  JobSpec spec = gpu_job(1);
  spec.gpu_request.arch = "sm_90";
  auto args = sbatch_arguments(pool, spec, 10);
  ASSERT_TRUE(args) << args.error().to_string();
  EXPECT_THAT(*args, Contains("--constraint=hopper"));
  spec.gpu_request.arch = "sm_80";  // not mapped: not submitted as if any GPU would do
  auto unmapped = sbatch_arguments(pool, spec, 10);
  ASSERT_FALSE(unmapped);
  EXPECT_THAT(unmapped.error().message, HasSubstr("gpu-arch:sm_80 has no Slurm node feature"));
}

TEST(SlurmExecutor, RequestsSlurmCannotTake) {
  config::SlurmPool pool;
  auto unmapped = sbatch_arguments(pool, gpu_job(1, "a100"), 10);
  ASSERT_FALSE(unmapped);
  EXPECT_THAT(unmapped.error().message, HasSubstr("gpu-model:a100 has no GRES type"));
  JobSpec all = gpu_job(0);
  all.gpu_request.all = true;
  ASSERT_FALSE(sbatch_arguments(pool, all, 10));
}

TEST(SlurmExecutor, SqueueStatesAndHowAJobEnded) {
  auto states = parse_squeue_states("12 RUNNING\n13 NODE_FAIL\n14 COMPLETED\n\n");
  EXPECT_EQ(states, (std::map<std::string, std::string>{
                        {"12", "RUNNING"}, {"13", "NODE_FAIL"}, {"14", "COMPLETED"}}));
  EXPECT_FALSE(slurm_state_ended("RUNNING"));
  EXPECT_FALSE(slurm_state_ended("COMPLETING"));
  EXPECT_FALSE(slurm_state_ended("PENDING"));
  for (const char* ended : {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "PREEMPTED",
                            "BOOT_FAIL", "TIMEOUT", "OUT_OF_MEMORY"})
    EXPECT_TRUE(slurm_state_ended(ended)) << ended;
  // The cluster's doing: an infrastructure failure whatever the agent said.
  EXPECT_THAT(slurm_cluster_end("NODE_FAIL"), HasSubstr("node failed"));
  EXPECT_THAT(slurm_cluster_end("PREEMPTED"), HasSubstr("preempted"));
  EXPECT_THAT(slurm_cluster_end("BOOT_FAIL"), HasSubstr("boot"));
  // Someone's scancel, the agent's own failure: not the cluster's.
  EXPECT_EQ(slurm_cluster_end("CANCELLED"), "");
  EXPECT_EQ(slurm_cluster_end("FAILED"), "");
  EXPECT_EQ(slurm_cluster_end(""), "");
}

TEST(SlurmAgent, GpuEnvironmentAsSlurmSetIt) {
  auto env = slurm_gpu_environment({{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_JOB_GPUS", "2,3"}});
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["KILN_GPUS"], "2");
  auto amd = slurm_gpu_environment({{"ROCR_VISIBLE_DEVICES", "0"}});
  EXPECT_EQ(amd["ROCR_VISIBLE_DEVICES"], "0");
  EXPECT_EQ(amd["KILN_GPUS"], "1");
  EXPECT_FALSE(amd.contains("CUDA_VISIBLE_DEVICES"));
  // No allocation: CUDA sees none, as a host job without GPUs.
  auto none = slurm_gpu_environment({});
  EXPECT_EQ(none["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(none["KILN_GPUS"], "0");
}

TEST(SlurmJob, OutcomeRoundTrip) {
  JobSummary summary;
  summary.conclusion = Conclusion::failure;
  summary.reason = "step 'test' failed";
  summary.outputs = {{"o", "v"}};
  summary.steps.push_back({.index = 0,
                           .name = "test",
                           .id = "t",
                           .outcome = Conclusion::failure,
                           .conclusion = Conclusion::failure,
                           .exit_code = 3,
                           .duration = {},
                           .outputs = {}});
  summary.failure =
      StepFailure{.step_index = 0, .step = "test", .kind = "exit code", .exit_code = 3};
  summary.failure_class = store::FailureClass::code;
  summary.failure_evidence = "exit code 3";
  auto back = outcome_from_json(outcome_to_json(summary));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->conclusion, Conclusion::failure);
  EXPECT_EQ(back->reason, summary.reason);
  EXPECT_EQ(back->outputs, summary.outputs);
  ASSERT_EQ(back->steps.size(), 1u);
  EXPECT_EQ(back->steps[0].id, "t");
  EXPECT_EQ(back->steps[0].exit_code, 3);
  ASSERT_TRUE(back->failure);
  EXPECT_EQ(back->failure->kind, "exit code");
  EXPECT_EQ(back->failure_class, store::FailureClass::code);
  EXPECT_EQ(stop_reason_of(*back).kind, StopReason::Kind::failed_step);
}

}  // namespace
}  // namespace kiln::engine
