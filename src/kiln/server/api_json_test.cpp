#include "kiln/server/api_json.h"

#include <gtest/gtest.h>

namespace kiln::server {
namespace {

// GET /api/runs/ID: each job says why it failed (docs/failures.md), null for one that did not.
TEST(ApiJson, JobsCarryTheirFailureClassAndEvidence) {
  store::RunDetail detail;
  detail.run.id = 7;
  store::JobDetail failed;
  failed.job.key = "train";
  failed.job.conclusion = store::Conclusion::failure;
  failed.job.failure_class = store::FailureClass::gpu_fault;
  failed.job.failure_evidence = "GPU 0 (GPU-a): Xid 79";
  store::JobDetail passed;
  passed.job.key = "lint";
  passed.job.conclusion = store::Conclusion::success;
  detail.jobs = {failed, passed};
  auto json = to_json(detail);
  EXPECT_EQ(json["jobs"][0]["failure_class"], "gpu-fault");
  EXPECT_EQ(json["jobs"][0]["failure_evidence"], "GPU 0 (GPU-a): Xid 79");
  EXPECT_TRUE(json["jobs"][1]["failure_class"].is_null());
  EXPECT_EQ(json["jobs"][1]["failure_evidence"], "");
}

// The run page's facts: who and what started a served run (run_queue.cpp stamps them), and
// each job's annotations with file, line and step; absent for rows stored without them.
TEST(ApiJson, RunsCarryTheirTriggerAndCommitAndJobsTheirAnnotations) {
  store::RunDetail detail;
  detail.run.id = 9;
  detail.run.extra = {{"changed_files", 2},
                      {"trigger", {{"id", 4}, {"sender", "alice"}, {"received_at", 1000}}},
                      {"commit", {{"message", "Fix the kernel\n\nLonger text"}, {"author", "Al"}}}};
  store::JobDetail annotated;
  annotated.job.key = "build";
  annotated.job.extra = {{"annotations",
                          {{{"level", "error"},
                            {"message", "bad cast"},
                            {"file", "src/a.cu"},
                            {"line", 12},
                            {"step", 1}}}}};
  annotated.job.queue = {.priority = "main",
                         .queued_at = 5000,
                         .waited_ms = 1500,
                         .reasons_ms = {{"gpus", 1200}},
                         .gpu_model = "H200"};
  store::JobDetail plain;
  plain.job.key = "lint";
  detail.jobs = {annotated, plain};
  auto json = to_json(detail);
  EXPECT_EQ(json["trigger"]["sender"], "alice");
  EXPECT_EQ(json["trigger"]["id"], 4);
  EXPECT_EQ(json["trigger"]["received_at"], 1000);
  EXPECT_EQ(json["commit"]["message"], "Fix the kernel\n\nLonger text");
  EXPECT_EQ(json["commit"]["author"], "Al");
  EXPECT_FALSE(json.contains("changed_files"));  // the rest of extra stays out
  ASSERT_EQ(json["jobs"][0]["annotations"].size(), 1U);
  EXPECT_EQ(json["jobs"][0]["annotations"][0]["file"], "src/a.cu");
  EXPECT_EQ(json["jobs"][0]["annotations"][0]["line"], 12);
  EXPECT_EQ(json["jobs"][0]["annotations"][0]["step"], 1);
  EXPECT_TRUE(json["jobs"][1]["annotations"].is_array());
  EXPECT_TRUE(json["jobs"][1]["annotations"].empty());
  EXPECT_EQ(json["jobs"][0]["queue"]["priority"], "main");
  EXPECT_DOUBLE_EQ(json["jobs"][0]["queue"]["seconds"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(json["jobs"][0]["queue"]["waited"]["gpus"].get<double>(), 1.2);
  EXPECT_TRUE(json["jobs"][1]["queue"]["seconds"].is_null());  // it did not start

  store::Run bare;  // a run of `kiln run`, or one stored before
  bare.id = 10;
  EXPECT_TRUE(to_json(bare)["trigger"].is_null());
  EXPECT_TRUE(to_json(bare)["commit"].is_null());
}

}  // namespace
}  // namespace kiln::server
