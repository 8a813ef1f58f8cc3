#include "kiln/gpu/allocator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "kiln/gpu/simulated_provider.h"

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;

Inventory two_islands() {
  auto inv = load_simulated_inventory(fs::path(KILN_SOURCE_DIR) /
                                      "tests/data/gpu/h100-8x-two-islands.json");
  EXPECT_TRUE(inv) << inv.error().to_string();
  return *inv;
}

GpuRequest request(std::vector<std::string> labels) {
  auto parsed = parse_gpu_request(labels);
  EXPECT_TRUE(parsed) << parsed.error().to_string();
  return *parsed;
}

using Gpus = std::vector<int>;

TEST(Allocator, FourGpusComeFromOneNvLinkIsland) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {}, request({"gpu:4"}));
  ASSERT_EQ(d.verdict, Verdict::granted) << d.reason;
  EXPECT_EQ(d.gpus, (Gpus{0, 1, 2, 3}));
  d = choose_gpus(inv, {0}, request({"gpu:4"}));
  ASSERT_EQ(d.verdict, Verdict::granted) << d.reason;
  EXPECT_EQ(d.gpus, (Gpus{4, 5, 6, 7}));  // the whole free island, not 1,2,3 + one across
}

TEST(Allocator, TwoGpusShareAnIsland) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {1, 2}, request({"gpu:2"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  // GPU 0 and 3 are the two left in island A: best fit keeps island B whole.
  EXPECT_EQ(d.gpus, (Gpus{0, 3}));
}

TEST(Allocator, OneGpuIsTakenFromTheFullestIsland) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {4}, request({"gpu"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  EXPECT_EQ(d.gpus, (Gpus{5}));  // island B already has a job; island A stays whole
}

TEST(Allocator, SplitIslandsGiveThreePlusOne) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {0, 4}, request({"gpu:4"}));
  ASSERT_EQ(d.verdict, Verdict::granted) << d.reason;
  EXPECT_EQ(d.gpus, (Gpus{1, 2, 3, 5}));  // three NVLinked + one: fewer slow pairs than 2 + 2
}

TEST(Allocator, NotNowVersusNever) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {0, 1, 2, 4, 5, 6}, request({"gpu:4"}));
  EXPECT_EQ(d.verdict, Verdict::wait);
  EXPECT_EQ(d.reason, "not now: 4 GPUs requested ('gpu:4'), 2 of 8 matching GPUs free");
  EXPECT_TRUE(d.gpus.empty());

  d = choose_gpus(inv, {}, request({"gpu:9"}));
  EXPECT_EQ(d.verdict, Verdict::never);
  EXPECT_EQ(d.reason,
            "never satisfiable on this host: 9 GPUs requested ('gpu:9'), 8 of its 8 GPUs match");
  d = choose_gpus(inv, {}, request({"gpu-vendor:amd"}));
  EXPECT_EQ(d.verdict, Verdict::never);
  EXPECT_EQ(d.reason,
            "never satisfiable on this host: none of its 8 GPUs matches 'gpu:1 gpu-vendor:amd'");
  d = choose_gpus(inv, {}, request({"gpu-mem:100G"}));
  EXPECT_EQ(d.verdict, Verdict::never);
  d = choose_gpus(inv, {}, request({"gpu-arch:sm_80"}));
  EXPECT_EQ(d.verdict, Verdict::never);
  d = choose_gpus(inv, {}, request({"gpu-model:h100", "gpu-arch:sm_90", "gpu:8"}));
  EXPECT_EQ(d.verdict, Verdict::granted);
}

TEST(Allocator, FreeMemoryIsCheckedNowTotalMemoryForNever) {
  auto inv = two_islands();  // GPU 5 has 40000 of 81559 MiB in use
  auto d = choose_gpus(inv, {}, request({"gpu:8", "gpu-mem:60G"}));
  EXPECT_EQ(d.verdict, Verdict::wait);  // GPU 5 could free its memory later
  d = choose_gpus(inv, {}, request({"gpu:4", "gpu-mem:60G"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  EXPECT_EQ(d.gpus, (Gpus{0, 1, 2, 3}));
  d = choose_gpus(inv, {0}, request({"gpu:4", "gpu-mem:60G"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  EXPECT_EQ(std::count(d.gpus.begin(), d.gpus.end(), 5), 0);
}

TEST(Allocator, AllMeansEveryMatchingGpu) {
  auto inv = two_islands();
  auto d = choose_gpus(inv, {}, request({"gpu:all"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  EXPECT_EQ(d.gpus.size(), 8u);
  d = choose_gpus(inv, {3}, request({"gpu:all"}));
  EXPECT_EQ(d.verdict, Verdict::wait);
}

TEST(Allocator, PcieSwitchBeatsHostBridgeWithoutFabric) {
  Inventory inv;
  inv.provider = "simulated";
  for (int i = 0; i < 4; ++i)
    inv.gpus.push_back({i, simulated_uuid(i), "amd", "W7900", "gfx1100", "", 0, 49136, 0, {}, ""});
  inv.links = {{0, 1, LinkKind::pcie_host, 0},   {0, 2, LinkKind::pcie_host, 0},
               {0, 3, LinkKind::pcie_host, 0},   {1, 2, LinkKind::pcie_host, 0},
               {1, 3, LinkKind::pcie_switch, 0}, {2, 3, LinkKind::pcie_host, 0}};
  auto d = choose_gpus(inv, {}, request({"gpu:2"}));
  ASSERT_EQ(d.verdict, Verdict::granted);
  EXPECT_EQ(d.gpus, (Gpus{1, 3}));
}

TEST(Allocator, NoRequestNeedsNoGpus) {
  auto d = choose_gpus(two_islands(), {0, 1, 2, 3, 4, 5, 6, 7}, request({"self-hosted"}));
  EXPECT_EQ(d.verdict, Verdict::granted);
  EXPECT_TRUE(d.gpus.empty());
}

TEST(Allocator, RandomRequestsNeverDoubleGrant) {
  // Random grants and releases on the 8-GPU host: a grant only ever holds free, distinct GPUs of
  // the requested size, and a request is refused "not now" only when too few GPUs are free.
  auto inv = two_islands();
  std::mt19937 rng(12345);
  std::vector<Gpus> held;
  std::set<int> busy;
  for (int step = 0; step < 2000; ++step) {
    if (!held.empty() && rng() % 3 == 0) {
      auto at = rng() % held.size();
      for (int g : held[at]) busy.erase(g);
      held.erase(held.begin() + static_cast<long>(at));
      continue;
    }
    int count = 1 << (rng() % 4);  // 1, 2, 4, 8
    auto d = choose_gpus(inv, busy, request({fmt::format("gpu:{}", count)}));
    if (d.verdict == Verdict::granted) {
      ASSERT_EQ(static_cast<int>(d.gpus.size()), count);
      for (int g : d.gpus) {
        ASSERT_FALSE(busy.contains(g)) << "GPU " << g << " granted twice at step " << step;
        busy.insert(g);
      }
      held.push_back(d.gpus);
    } else {
      ASSERT_EQ(d.verdict, Verdict::wait);
      ASSERT_LT(8 - static_cast<int>(busy.size()), count);
    }
  }
}

}  // namespace
}  // namespace kiln::gpu
