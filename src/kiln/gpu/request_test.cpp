#include "kiln/gpu/request.h"

#include <gtest/gtest.h>

namespace kiln::gpu {
namespace {

GpuRequest parse(std::vector<std::string> labels) {
  auto request = parse_gpu_request(labels);
  EXPECT_TRUE(request) << request.error().to_string();
  return request.value_or(GpuRequest{});
}

std::string error_of(std::vector<std::string> labels) {
  auto request = parse_gpu_request(labels);
  return request ? "(parsed)" : request.error().message;
}

TEST(GpuRequest, NoGpuLabelsNoGpus) {
  auto request = parse({"self-hosted", "linux", "x64"});
  EXPECT_FALSE(request.wants_gpus());
  EXPECT_EQ(request.count, 0);
}

TEST(GpuRequest, Counts) {
  EXPECT_EQ(parse({"self-hosted", "gpu"}).count, 1);
  EXPECT_EQ(parse({"gpu:4"}).count, 4);
  EXPECT_EQ(parse({"GPU:2"}).count, 2);  // labels are case-insensitive
  auto all = parse({"gpu:all"});
  EXPECT_TRUE(all.all);
  EXPECT_TRUE(all.wants_gpus());
  EXPECT_EQ(parse({"gpu:2", "gpu:2"}).count, 2);  // repeating the same count is harmless
}

TEST(GpuRequest, Qualifiers) {
  auto request =
      parse({"gpu:2", "gpu-vendor:NVIDIA", "gpu-model:H100", "gpu-arch:sm_90", "gpu-mem:40G"});
  EXPECT_EQ(request.count, 2);
  EXPECT_EQ(request.vendor, "nvidia");
  EXPECT_EQ(request.model, "h100");
  EXPECT_EQ(request.arch, "sm_90");
  EXPECT_EQ(request.min_free_mib, 40u * 1024);
  EXPECT_EQ(request.to_string(),
            "gpu:2 gpu-vendor:nvidia gpu-model:h100 gpu-arch:sm_90 gpu-mem:40G");
  EXPECT_EQ(parse({"gpu-arch:gfx942"}).count, 1);  // a qualifier alone asks for one GPU
  EXPECT_EQ(parse({"gpu-arch:gfx90a"}).arch, "gfx90a");
  EXPECT_EQ(parse({"gpu-arch:gfx1100"}).arch, "gfx1100");
}

TEST(GpuRequest, CustomGpuLabelsAreNotThisGrammars) {
  auto request = parse({"gpu-a100", "roc-gpu-mi200", "linux.rocm.gpu.gfx942.2", "gpu-pool:x"});
  EXPECT_FALSE(request.wants_gpus());
}

TEST(GpuRequest, MalformedLabelsAreErrors) {
  EXPECT_EQ(error_of({"gpu:0"}),
            "runs-on label 'gpu:0': the GPU count must be a positive integer or 'all'");
  EXPECT_EQ(error_of({"gpu:two"}),
            "runs-on label 'gpu:two': the GPU count must be a positive integer or 'all'");
  EXPECT_EQ(error_of({"gpu:"}),
            "runs-on label 'gpu:': the GPU count must be a positive integer or 'all'");
  EXPECT_EQ(error_of({"gpu:2", "gpu:4"}), "runs-on label 'gpu:4' contradicts 'gpu:2'");
  EXPECT_EQ(error_of({"gpu:all", "gpu"}), "runs-on label 'gpu' contradicts 'gpu:all'");
  EXPECT_EQ(error_of({"gpu-vendor:intel"}),
            "runs-on label 'gpu-vendor:intel': the vendor must be nvidia or amd");
  EXPECT_EQ(
      error_of({"gpu-mem:16"}),
      "runs-on label 'gpu-mem:16': memory must be a positive number of GiB, e.g. gpu-mem:40G");
  EXPECT_EQ(
      error_of({"gpu-mem:0G"}),
      "runs-on label 'gpu-mem:0G': memory must be a positive number of GiB, e.g. gpu-mem:40G");
  EXPECT_EQ(error_of({"gpu-arch:90"}),
            "runs-on label 'gpu-arch:90': the architecture must be sm_NN (NVIDIA) or gfxNNN (AMD), "
            "e.g. sm_90 or gfx942");
  EXPECT_EQ(error_of({"gpu-model:"}), "runs-on label 'gpu-model:': gpu-model needs a value");
  EXPECT_EQ(error_of({"gpu-vendor:amd", "gpu-vendor:nvidia"}),
            "runs-on label 'gpu-vendor:nvidia': gpu-vendor is already 'amd' from 'gpu-vendor:amd'");
  EXPECT_EQ(error_of({"gpu-vendor:amd", "gpu-arch:sm_90"}),
            "runs-on labels: gpu-arch:sm_90 (from 'gpu-arch:sm_90') is not an architecture of "
            "gpu-vendor:amd (from 'gpu-vendor:amd')");
}

TEST(GpuRequest, ErrorsCarryTheLabelsLocation) {
  std::vector<GpuLabel> labels = {{"self-hosted", {"ci.yml", 5, 14}}, {"gpu:x", {"ci.yml", 5, 27}}};
  auto request = parse_gpu_request(labels);
  ASSERT_FALSE(request);
  EXPECT_EQ(request.error().to_string(),
            "ci.yml:5:27: error: runs-on label 'gpu:x': the GPU count must be a positive integer "
            "or 'all'");
  EXPECT_EQ(request.error().exit_code(), 2);
}

}  // namespace
}  // namespace kiln::gpu

namespace kiln::gpu {
namespace {

TEST(GpuRequest, MemoryBudget) {
  auto request = parse({"gpu:2", "gpu-mem-budget:40G"});
  EXPECT_EQ(request.memory_budget_mib, 40u * 1024);
  EXPECT_EQ(request.count, 2);
  EXPECT_EQ(parse({"gpu", "gpu-mem-budget:512M"}).memory_budget_mib, 512u);
  EXPECT_EQ(parse({"gpu-mem-budget:1G"}).count, 1);  // a qualifier: one GPU
  EXPECT_EQ(parse({"gpu", "gpu-mem-budget:2G"}).to_string(), "gpu:1 gpu-mem-budget:2048M");
  EXPECT_NE(error_of({"gpu-mem-budget:40"}).find("gpu-mem-budget:40G or"), std::string::npos);
  EXPECT_NE(error_of({"gpu-mem-budget:0G"}).find("a budget must be"), std::string::npos);
  EXPECT_NE(error_of({"gpu-mem-budget:1G", "gpu-mem-budget:2G"}).find("already 1024M"),
            std::string::npos);
  GpuLabel located{"gpu-mem-budget:lots", {"ci.yml", 7, 14}};
  auto error = parse_gpu_request(std::span<const GpuLabel>(&located, 1));
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().where.line, 7);
  EXPECT_EQ(error.error().where.column, 14);
}

}  // namespace
}  // namespace kiln::gpu
