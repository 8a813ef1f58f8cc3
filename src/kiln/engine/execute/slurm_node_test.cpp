#include "kiln/engine/execute/slurm_node.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(SlurmNode, AllocatedGpusFromSlurmsVariables) {
  auto both = slurm_allocated_gpus({{"SLURM_JOB_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(both);
  EXPECT_EQ(*both, (std::vector<int>{2, 3}));  // node-wide ids, not the job's renumbering
  auto cuda = slurm_allocated_gpus({{"CUDA_VISIBLE_DEVICES", "1"}});
  ASSERT_TRUE(cuda);
  EXPECT_EQ(*cuda, (std::vector<int>{1}));
  auto none = slurm_allocated_gpus({});
  ASSERT_TRUE(none);
  EXPECT_THAT(*none, IsEmpty());
  auto uuids = slurm_allocated_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-1234"}});
  ASSERT_FALSE(uuids);
  EXPECT_THAT(uuids.error().message, HasSubstr("CUDA_VISIBLE_DEVICES=GPU-1234"));
}

TEST(SlurmNode, DrainReasonIsOneShortLine) {
  EXPECT_EQ(slurm_drain_reason("GPU 0 (GPU-a): Xid 79", "12"),
            "kiln: GPU 0 (GPU-a): Xid 79 (Slurm job 12)");
  auto long_reason = slurm_drain_reason(std::string(500, 'x') + "\n\"", "12");
  EXPECT_LE(long_reason.size(), 200u);
  EXPECT_THAT(long_reason, HasSubstr("... (Slurm job 12)"));
  EXPECT_EQ(slurm_drain_reason("a\nb", ""), "kiln: a b");
}

// A node whose GPUs are a simulated inventory, and an scontrol that writes down what it was asked.
class SlurmNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-slurm-node-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    options_.host_store.file = dir_ / "host.db";
    options_.simulate_gpus = dir_ / "gpus.json";
    options_.gpu_health.memory_grace = std::chrono::milliseconds(0);
    scontrol_ = dir_ / "scontrol";
    std::ofstream(scontrol_) << "#!/bin/sh\necho \"$@\" >> '" << (dir_ / "asked").string() << "'\n";
    ::chmod(scontrol_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void gpus(const std::string& second_gpu_extra) {
    std::ofstream(dir_ / "gpus.json")
        << R"({"gpus": [{"vendor": "nvidia", "model": "H100", "memory_mib": 81559, "uuid": "GPU-a"},
                        {"vendor": "nvidia", "model": "H100", "memory_mib": 81559, "uuid": "GPU-b")"
        << second_gpu_extra << "}]}";
  }
  std::string asked() const {
    std::ifstream in(dir_ / "asked");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  SlurmNodeGpus node(std::vector<int> allocated) {
    return SlurmNodeGpus({.options = &options_,
                          .node = "kn2",
                          .slurm_job = "12",
                          .allocated = std::move(allocated),
                          .scontrol = scontrol_.string()});
  }
  static store::GpuLease lease(const std::string& token) {
    store::GpuLease out;
    out.holder = "repo: ci / train (run 1)";
    out.job_token = token;
    return out;
  }

  fs::path dir_, scontrol_;
  RunOptions options_;
};

TEST_F(SlurmNodeTest, HealthyGpusAreLeasedAndTheNodeIsLeftAlone) {
  gpus("");
  auto gpus = node({1});
  auto before = gpus.before_job(lease("t1"));
  EXPECT_EQ(before.problem, "");
  ASSERT_EQ(gpus.gpus().size(), 1u);
  EXPECT_EQ(gpus.gpus()[0].uuid, "GPU-b");
  auto after = gpus.after_job("t1");
  EXPECT_THAT(after.quarantined, IsEmpty());
  EXPECT_EQ(asked(), "");
}

TEST_F(SlurmNodeTest, AFaultyGpuBeforeTheJobDrainsTheNodeAndStopsTheJob) {
  gpus(R"(, "faults": ["Xid 79: GPU has fallen off the bus"])");
  auto gpus = node({0, 1});
  auto before = gpus.before_job(lease("t2"));
  EXPECT_THAT(before.problem, HasSubstr("GPU 1 (GPU-b) failed its health check before the job"));
  EXPECT_THAT(before.problem, HasSubstr("Xid 79"));
  EXPECT_THAT(asked(), HasSubstr("update NodeName=kn2 State=DRAIN Reason=kiln: GPU 1 (GPU-b)"));
  EXPECT_THAT(asked(), HasSubstr("(Slurm job 12)"));
  bool said = false;
  for (const auto& line : before.lines) said |= line.text.starts_with("Drained Slurm node kn2: ");
  EXPECT_TRUE(said);
}

TEST_F(SlurmNodeTest, AFaultAfterTheJobDrainsTheNode) {
  const fs::path when = dir_ / "xid";
  gpus(fmt::format(R"(, "inject": {{"when": "{}", "faults": ["Xid 48: DBE"]}})", when.string()));
  auto gpus = node({1});
  ASSERT_EQ(gpus.before_job(lease("t3")).problem, "");
  EXPECT_EQ(asked(), "");
  std::ofstream(when) << "";  // the job's step broke the GPU
  auto after = gpus.after_job("t3");
  ASSERT_EQ(after.gpu_faults.size(), 1u);
  EXPECT_THAT(after.gpu_faults[0], HasSubstr("GPU 1 (GPU-b): Xid 48: DBE"));
  EXPECT_THAT(asked(), HasSubstr("NodeName=kn2 State=DRAIN Reason=kiln: GPU 1 (GPU-b): Xid 48"));
}

TEST_F(SlurmNodeTest, AnScontrolThatFailsIsSaid) {
  gpus(R"(, "faults": ["Xid 79"])");
  std::ofstream(scontrol_) << "#!/bin/sh\necho 'Access/permission denied' >&2\nexit 1\n";
  auto before = node({1}).before_job(lease("t4"));
  EXPECT_NE(before.problem, "");
  bool said = false;
  for (const auto& line : before.lines)
    said |= line.text.find("cannot drain Slurm node kn2") != std::string::npos &&
            line.text.find("Access/permission denied") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace kiln::engine
