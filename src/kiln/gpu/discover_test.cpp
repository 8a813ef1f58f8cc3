#include "kiln/gpu/discover.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;

fs::path data(const char* name) { return fs::path(KILN_SOURCE_DIR) / "tests/data/gpu" / name; }

TEST(Discover, ASimulatedSpecWinsOverEverythingElse) {
  DiscoverOptions options;
  options.simulate = data("one-h200.json");
  options.sysfs_root = data("amd-mi250");
  auto inv = discover_inventory(options);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "simulated");
  EXPECT_EQ(inv->gpus.size(), 1u);
}

TEST(Discover, ASysfsRootReadsThatTree) {
  DiscoverOptions options;
  options.sysfs_root = data("amd-mi250");
  auto inv = discover_inventory(options);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "amdgpu-sysfs");
  EXPECT_EQ(inv->gpus.size(), 4u);
}

TEST(Discover, ABadSpecIsReturnedAsIs) {
  DiscoverOptions options;
  options.simulate = data("bad-unknown-key.json");
  auto inv = discover_inventory(options);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().exit_code(), 2);
  EXPECT_NE(inv.error().to_string().find("gpus[1].memory_mb: unknown key"), std::string::npos);
}

TEST(Discover, NvmlIsUsedWhenItLoads) {
  DiscoverOptions options;
  options.nvml_library = KILN_FAKE_NVML;
  auto inv = discover_inventory(options);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "nvml");
  EXPECT_EQ(inv->gpus.size(), 4u);
}

TEST(Discover, WithoutNvmlOrAmdCardsThereAreNoGpus) {
  if (fs::exists("/sys/class/kfd") || fs::exists("/dev/nvidiactl"))
    GTEST_SKIP() << "this machine has GPUs";
  DiscoverOptions options;
  options.nvml_library = "libnvidia-ml-absent.so.1";
  auto inv = discover_inventory(options);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "none");
  EXPECT_TRUE(inv->gpus.empty());
}

}  // namespace
}  // namespace kiln::gpu
