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
    inv.gpus.push_back(
        {i, simulated_uuid(i), "amd", "W7900", "gfx1100", "", 0, 49136, 0, {}, "", {}, {}});
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

TEST(Allocator, ReservationPrefersTheSetThatFreesSoonest) {
  auto inv = two_islands();
  // Island A fully busy, island B has one busy GPU: a gpu:4 job waits for island B.
  EXPECT_EQ(reserve_gpus(inv, {0, 1, 2, 3, 6}, request({"gpu:4"})), (Gpus{4, 5, 6, 7}));
  EXPECT_EQ(reserve_gpus(inv, {}, request({"gpu:4"})), (Gpus{0, 1, 2, 3}));
  EXPECT_TRUE(reserve_gpus(inv, {}, request({"gpu:9"})).empty());
}

TEST(QueuePass, GrantsInOrderThenReservesForTheHead) {
  auto inv = two_islands();
  QueuePass pass(inv, {0, 4});  // one GPU busy in each island
  auto first = pass.place(request({"gpu:2"}));
  ASSERT_EQ(first.verdict, Verdict::granted);
  auto head = pass.place(request({"gpu:8"}));
  EXPECT_EQ(head.verdict, Verdict::wait);
  EXPECT_EQ(pass.reserved().size(), 8u);
  // Every GPU is reserved for the head now: a small job behind it does not start.
  EXPECT_EQ(pass.place(request({"gpu"})).verdict, Verdict::wait);
  // A job that can never run does not become the head or block anything.
  EXPECT_EQ(pass.place(request({"gpu:16"})).verdict, Verdict::never);
}

TEST(QueuePass, BackfillUsesOnlyGpusOutsideTheReservation) {
  auto inv = two_islands();
  QueuePass pass(inv, {0, 1, 2});  // island A has one free GPU, island B four
  auto head = pass.place(request({"gpu:8"}));
  EXPECT_EQ(head.verdict, Verdict::wait);
  EXPECT_EQ(pass.place(request({"gpu"})).verdict, Verdict::wait);

  // Island A has GPU 3 free, island B GPUs 6 and 7 (5 lacks the memory, 4 is busy): a gpu:4
  // job with 60G each waits, reserving island B; a one-GPU job may still take GPU 3.
  QueuePass second(inv, {0, 1, 2, 4});
  EXPECT_EQ(second.place(request({"gpu:4", "gpu-mem:60G"})).verdict, Verdict::wait);
  EXPECT_EQ(second.reserved(), (Gpus{4, 5, 6, 7}));
  auto small = second.place(request({"gpu"}));
  ASSERT_EQ(small.verdict, Verdict::granted) << small.reason;
  EXPECT_EQ(small.gpus, (Gpus{3}));
  EXPECT_EQ(second.place(request({"gpu"})).verdict, Verdict::wait);
}

TEST(QueuePass, NoStarvationOfALargeJobUnderAStreamOfSmallOnes) {
  // Simulated time: small jobs keep arriving; a gpu:8 job queued early must start once the GPUs
  // running at its arrival finish, however many small jobs arrive after it.
  auto inv = two_islands();
  std::mt19937 rng(7);
  struct Running {
    Gpus gpus;
    int ends;
  };
  std::vector<Running> running;
  std::vector<GpuRequest> queue;
  for (int i = 0; i < 6; ++i) queue.push_back(request({"gpu"}));
  queue.push_back(request({"gpu:8"}));
  std::size_t large_left = 1;
  int started_large_at = -1;
  for (int t = 0; t < 200 && started_large_at < 0; ++t) {
    std::erase_if(running, [&](const Running& r) { return r.ends <= t; });
    for (int i = 0; i < 2; ++i) queue.push_back(request({"gpu"}));  // the stream
    std::set<int> busy;
    for (const auto& r : running) busy.insert(r.gpus.begin(), r.gpus.end());
    QueuePass pass(inv, busy);
    std::vector<GpuRequest> still;
    for (const auto& job : queue) {
      auto d = pass.place(job);
      if (d.verdict == Verdict::granted) {
        running.push_back({d.gpus, t + 3 + static_cast<int>(rng() % 5)});
        if (job.count == 8) {
          started_large_at = t;
          --large_left;
        }
      } else {
        still.push_back(job);
      }
    }
    queue = std::move(still);
  }
  EXPECT_EQ(large_left, 0u);
  EXPECT_GE(started_large_at, 0);
  EXPECT_LE(started_large_at, 10);  // the six small jobs ahead of it end by then (ends <= t+7)
}

}  // namespace
}  // namespace kiln::gpu
