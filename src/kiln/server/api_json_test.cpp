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

}  // namespace
}  // namespace kiln::server
