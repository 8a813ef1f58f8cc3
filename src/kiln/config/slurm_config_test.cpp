#include "kiln/config/slurm_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/config/host_config.h"

namespace kiln::config {
namespace {

using ::testing::HasSubstr;

Result<HostConfig> with_nodes(const std::string& nodes) {
  return parse_host_config(
      "slurm:\n"
      "  spool: /shared/spool\n"
      "  simulate_gpus: gpus/{node}.json\n"
      "  pools:\n"
      "    - labels: [gpu]\n"
      "      partition: gpu\n"
      "      gpu-model: {h100: h100_80g, a100: a100}\n" +
          nodes,
      "/etc/kiln/kiln.yml");
}

gpu::GpuRequest gpus(int count, const std::string& model = "") {
  gpu::GpuRequest request;
  request.count = count;
  request.model = model;
  return request;
}

TEST(SlurmConfig, NodesDescribeWhatThePartitionCanEverHold) {
  auto config = with_nodes(
      "      nodes:\n"
      "        - gres: gpu:h100_80g:8(S:0-1)\n"
      "        - gres: gpu:h100_80g:2,gpu:a100:4,shard:8\n");
  ASSERT_TRUE(config) << config.error().to_string();
  ASSERT_TRUE(config->slurm);
  EXPECT_EQ(config->slurm->simulate_gpus, "/etc/kiln/gpus/{node}.json");
  const SlurmPool& pool = config->slurm->pools.at(0);
  ASSERT_EQ(pool.nodes.size(), 2u);
  EXPECT_EQ(pool.nodes[1].gpus, (std::map<std::string, int>{{"h100_80g", 2}, {"a100", 4}}));
  EXPECT_EQ(pool.never_placed(gpus(8, "h100")), std::nullopt);
  EXPECT_EQ(pool.never_placed(gpus(6)), std::nullopt);  // any type: 2 + 4 on the second kind
  EXPECT_EQ(pool.never_placed(gpus(0)), std::nullopt);
  auto too_many = pool.never_placed(gpus(5, "a100"));
  ASSERT_TRUE(too_many);
  EXPECT_THAT(*too_many, HasSubstr("no node of kiln.yml's Slurm pool (/etc/kiln/kiln.yml:5, "
                                   "partition gpu) has gpu:a100:5: its nodes have "
                                   "gpu:h100_80g:8(S:0-1); gpu:h100_80g:2,gpu:a100:4,shard:8"));
  ASSERT_TRUE(pool.never_placed(gpus(9)));
  auto unmapped = pool.never_placed(gpus(1, "mi300"));
  ASSERT_TRUE(unmapped);
  EXPECT_THAT(*unmapped, HasSubstr("gpu-model:mi300 has no GRES type"));
}

TEST(SlurmConfig, WithoutNodesSlurmDecidesAtSubmission) {
  auto config = with_nodes("");
  ASSERT_TRUE(config) << config.error().to_string();
  const SlurmPool& pool = config->slurm->pools.at(0);
  EXPECT_EQ(pool.never_placed(gpus(64, "h100")), std::nullopt);
  auto gres = pool.gres_of(gpus(2, "h100"));
  ASSERT_TRUE(gres);
  EXPECT_EQ(*gres, "gpu:h100_80g:2");
  EXPECT_EQ(*pool.gres_of(gpus(1)), "gpu:1");
  EXPECT_EQ(*pool.gres_of(gpus(0)), "");
}

TEST(SlurmConfig, BadNodesAreErrorsAtTheirLine) {
  auto bad = with_nodes("      nodes:\n        - gres: gpu:h100:eight\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where.line, 9);
  EXPECT_THAT(bad.error().message, HasSubstr("'gpu:h100:eight' is not a GRES"));
  auto key = with_nodes("      nodes:\n        - gress: gpu:1\n");
  ASSERT_FALSE(key);
  EXPECT_THAT(key.error().message, HasSubstr("unknown key 'gress'"));
  auto empty = with_nodes("      nodes: []\n");
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message, HasSubstr("expected a list of kinds of node"));
}

gpu::GpuRequest wants(int count, const std::string& arch, int mem_gib = 0,
                      const std::string& vendor = "") {
  gpu::GpuRequest request = gpus(count);
  request.arch = arch;
  request.vendor = vendor;
  request.min_free_mib = static_cast<std::uint64_t>(mem_gib) * 1024;
  return request;
}

TEST(SlurmConfig, FeaturesBecomeTheConstraint) {
  auto config = with_nodes(
      "      features:\n"
      "        gpu-vendor:nvidia: ''\n"
      "        gpu-arch:sm_90: hopper\n"
      "        gpu-mem:80G: hbm80\n"
      "        gpu-mem:141G: hbm141\n"
      "      nodes:\n"
      "        - gres: gpu:h100_80g:8\n"
      "          features: [hopper, hbm80]\n");
  ASSERT_TRUE(config) << config.error().to_string();
  const SlurmPool& pool = config->slurm->pools.at(0);
  // Every mapped amount of at least the request's will do; "" adds nothing.
  EXPECT_EQ(*pool.constraint_of(wants(1, "sm_90", 40, "nvidia")), "hopper&(hbm80|hbm141)");
  EXPECT_EQ(*pool.constraint_of(wants(1, "", 100)), "hbm141");
  EXPECT_EQ(*pool.constraint_of(wants(2, "")), "");
  auto amd = pool.constraint_of(wants(1, "", 0, "amd"));
  ASSERT_FALSE(amd);
  EXPECT_THAT(amd.error().message,
              HasSubstr("gpu-vendor:amd has no Slurm node feature in kiln.yml's Slurm pool"));
  auto huge = pool.constraint_of(wants(1, "", 200));
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().message, HasSubstr("gpu-mem:200G has no Slurm node feature"));
  // The nodes kiln.yml describes have hopper and hbm80, not hbm141.
  EXPECT_EQ(pool.never_placed(wants(8, "sm_90", 80)), std::nullopt);
  auto big = pool.never_placed(wants(1, "sm_90", 100));
  ASSERT_TRUE(big);
  EXPECT_THAT(*big, HasSubstr("has gpu:1 with features hopper&hbm141: its nodes have "
                              "gpu:h100_80g:8 [hopper,hbm80]"));
  auto arch = pool.never_placed(wants(1, "gfx942"));
  ASSERT_TRUE(arch);
  EXPECT_THAT(*arch, HasSubstr("gpu-arch:gfx942 has no Slurm node feature"));
}

TEST(SlurmConfig, BadFeaturesAreErrorsAtTheirLine) {
  auto count = with_nodes("      features: {'gpu:2': two}\n");
  ASSERT_FALSE(count);
  EXPECT_THAT(count.error().message,
              HasSubstr("'gpu:2' is not one gpu-vendor:, gpu-arch: or gpu-mem: label"));
  auto two = with_nodes("      features: {gpu-arch:sm_90: 'a&b'}\n");
  ASSERT_FALSE(two);
  EXPECT_THAT(two.error().message, HasSubstr("'a&b' is not a Slurm node feature"));
  auto both = with_nodes(
      "      sbatch_args: [--constraint=ib]\n"
      "      features: {gpu-arch:sm_90: hopper}\n");
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().where.line, 8);
  EXPECT_THAT(both.error().message, HasSubstr("'--constraint=ib' next to features"));
}

}  // namespace
}  // namespace kiln::config
