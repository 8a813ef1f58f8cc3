// Randomized tests of the allocator: the same choices as the allocator before the Topology
// (testdata/naive_allocator.h) on random hosts, and, in simulations where jobs come and go
// through QueuePass, no GPU granted twice and no queued job left waiting for ever.

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <random>

#include "kiln/gpu/allocator.h"
#include "kiln/gpu/simulated_provider.h"
#include "kiln/gpu/testdata/generated_inventory.h"
#include "kiln/gpu/testdata/naive_allocator.h"

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;
using Gpus = std::vector<int>;

Inventory two_islands() {
  auto inv = load_simulated_inventory(fs::path(KILN_SOURCE_DIR) /
                                      "tests/data/gpu/h100-8x-two-islands.json");
  EXPECT_TRUE(inv) << inv.error().to_string();
  return *inv;
}

int uniform_int(std::mt19937& rng, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(rng);
}

constexpr LinkKind k_kinds[] = {LinkKind::nvlink,    LinkKind::xgmi, LinkKind::pcie_switch,
                                LinkKind::pcie_host, LinkKind::numa, LinkKind::sys};

// A small random host. Half of them are made of islands that are cliques of fabric links with
// one link kind per pair of islands (mostly island-uniform, the allocator's fast path); the others
// have links between random pairs of random kinds (fabric components that are not cliques, as on
// an MI250: the reference search).
Inventory random_inventory(std::mt19937& rng) {
  Inventory inv;
  inv.provider = "simulated";
  const int n = uniform_int(rng, 1, 10);
  const bool by_islands = rng() % 2 == 0;
  for (int i = 0; i < n; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.uuid = simulated_uuid(i);
    gpu.vendor = rng() % 8 == 0 ? "amd" : "nvidia";
    gpu.model = gpu.vendor == "amd" ? "AMD Instinct MI300X" : "NVIDIA H100";
    gpu.arch = gpu.vendor == "amd" ? "gfx942" : "sm_90";
    gpu.numa_node = uniform_int(rng, -1, 1);
    gpu.memory_total_mib = rng() % 4 == 0 ? 40960 : 81920;
    gpu.memory_used_mib = rng() % 5 == 0 ? 30000 : 0;
    inv.gpus.push_back(std::move(gpu));
  }
  if (by_islands) {
    std::vector<int> island(n);
    const int islands = uniform_int(rng, 1, n);
    for (int i = 0; i < n; ++i) island[i] = uniform_int(rng, 0, islands - 1);
    std::vector<int> between(islands * islands);
    for (auto& kind : between) kind = uniform_int(rng, 2, 6);  // 6: no link
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        int x = std::min(island[a], island[b]), y = std::max(island[a], island[b]);
        int kind = x == y ? uniform_int(rng, 0, 1) : between[x * islands + y];
        if (kind < 6) inv.links.push_back({a, b, k_kinds[kind], 0});
      }
    }
  } else {
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        if (rng() % 3 != 0) inv.links.push_back({a, b, k_kinds[uniform_int(rng, 0, 5)], 0});
  }
  std::shuffle(inv.links.begin(), inv.links.end(), rng);
  return inv;
}

// Up to `gpus` + 1 GPUs (one more than a host of `gpus` has), or all of them on small hosts.
GpuRequest random_request(std::mt19937& rng, int gpus) {
  GpuRequest request;
  if (gpus <= 10 && rng() % 10 == 0)
    request.all = true;
  else
    request.count = uniform_int(rng, 1, gpus + 1);
  if (rng() % 6 == 0) request.vendor = rng() % 2 ? "amd" : "nvidia";
  if (rng() % 6 == 0) request.min_free_mib = 60 * 1024;
  return request;
}

std::set<int> random_subset(std::mt19937& rng, int gpus, int one_in) {
  std::set<int> subset;
  for (int g = 0; g < gpus; ++g)
    if (static_cast<int>(rng() % one_in) == 0) subset.insert(g);
  return subset;
}

// Both allocators on one host: every decision, reservation and queue pass must agree. Returns
// whether the host took the island-by-island path.
// Requests ask for at most `max_count` GPUs: the naive search costs O(GPUs² · count²).
bool expect_same_as_naive(const Inventory& inv, std::mt19937& rng, int cases, int max_count) {
  const int n = static_cast<int>(inv.gpus.size());
  Topology topology(inv);
  for (int c = 0; c < cases; ++c) {
    auto busy = random_subset(rng, n, uniform_int(rng, 2, 6));
    auto request = random_request(rng, std::min(n, max_count));
    auto fast = choose_gpus(topology, busy, request);
    auto slow = naive::naive_choose_gpus(inv, busy, request);
    EXPECT_EQ(fast.verdict, slow.verdict) << request.to_string();
    EXPECT_EQ(fast.gpus, slow.gpus) << request.to_string() << " busy " << busy.size();
    EXPECT_EQ(fast.reason, slow.reason);
    EXPECT_EQ(reserve_gpus(topology, busy, request), naive::naive_reserve_gpus(inv, busy, request))
        << request.to_string();
  }
  // A queue pass: the same grants, waits and head reservation.
  auto unavailable = random_subset(rng, n, uniform_int(rng, 3, 8));
  QueuePass fast(topology, unavailable);
  naive::NaiveQueuePass slow(inv, unavailable);
  for (int job = 0; job < 12; ++job) {
    auto request = random_request(rng, std::max(1, std::min(n, max_count) / 2));
    auto a = fast.place(request);
    auto b = slow.place(request);
    EXPECT_EQ(a.verdict, b.verdict) << request.to_string();
    EXPECT_EQ(a.gpus, b.gpus) << request.to_string();
    EXPECT_EQ(a.reason, b.reason);
  }
  EXPECT_EQ(fast.reserved(), slow.reserved());
  return topology.uniform();
}

TEST(AllocatorProperty, SameChoicesAsTheNaiveGreedyOnRandomSmallHosts) {
  std::mt19937 rng(20261130);
  int uniform = 0, other = 0;
  for (int host = 0; host < 600; ++host) {
    auto inv = random_inventory(rng);
    (expect_same_as_naive(inv, rng, 8, 10) ? uniform : other) += 1;
    if (HasFailure()) break;
  }
  // Both searches were exercised.
  EXPECT_GT(uniform, 150);
  EXPECT_GT(other, 150);
}

TEST(AllocatorProperty, SameChoicesAsTheNaiveGreedyOnGeneratedHosts) {
  std::mt19937 rng(42);
  // 16 and 32 GPUs in islands of 4 and 8, busy GPUs scattered so that many requests must span
  // islands; and the 8-GPU fixture with its one odd GPU (memory in use).
  EXPECT_TRUE(expect_same_as_naive(generated_inventory({4, 4, 2, LinkKind::nvlink}), rng, 150, 17));
  EXPECT_TRUE(expect_same_as_naive(generated_inventory({4, 8, 2, LinkKind::xgmi}), rng, 80, 12));
  EXPECT_TRUE(expect_same_as_naive(generated_inventory({8, 4, 4, LinkKind::nvlink}), rng, 80, 12));
  EXPECT_TRUE(expect_same_as_naive(two_islands(), rng, 300, 9));
}

TEST(Topology, RanksIslandsAndUniformity) {
  auto inv = two_islands();
  Topology topology(inv);
  EXPECT_EQ(topology.size(), 8);
  EXPECT_EQ(topology.island_count(), 2);
  EXPECT_EQ(topology.members(1), (Gpus{4, 5, 6, 7}));
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        EXPECT_EQ(topology.rank(a, b), link_rank(inv.connection(a, b))) << a << "," << b;
      }
  EXPECT_TRUE(topology.uniform());
  EXPECT_EQ(topology.island_rank(0, 1), link_rank(LinkKind::sys));

  auto big = generated_inventory({});
  Topology large(big);
  EXPECT_EQ(large.size(), 1024);
  EXPECT_EQ(large.island_count(), 128);
  EXPECT_TRUE(large.uniform());
  EXPECT_EQ(large.rank(0, 8), link_rank(LinkKind::pcie_host));  // islands 0 and 1 share a bridge
  EXPECT_EQ(large.rank(0, 16), link_rank(LinkKind::numa));
  EXPECT_EQ(large.rank(0, 32), link_rank(LinkKind::sys));
  EXPECT_EQ(large.rank(0, 16), link_rank(big.connection(0, 16)));

  // Two GCDs of an MI250 package linked to each other but one of them not to a third: one XGMI
  // component that is no clique.
  Inventory mi250 = inv;
  mi250.links = {{0, 1, LinkKind::xgmi, 0}, {1, 2, LinkKind::xgmi, 0}};
  Topology chain(mi250);
  EXPECT_EQ(chain.island(0), chain.island(2));
  EXPECT_FALSE(chain.uniform());
}

// A simulated host over time: jobs arrive, wait in a FIFO queue, get GPUs through one QueuePass
// per tick, and hold them for their duration. Checks every grant against what is held.
struct Simulation {
  struct Job {
    GpuRequest request;
    int duration = 1;
    int queued_at = 0;
    int started_at = -1;
  };
  struct Running {
    std::size_t job;
    Gpus gpus;
    int ends;
  };

  explicit Simulation(const Inventory& host) : inventory(host), topology(host) {}

  const Inventory& inventory;
  Topology topology;
  std::set<int> quarantined;
  std::vector<Job> jobs;
  std::deque<std::size_t> queue;
  std::vector<Running> running;
  int now = 0;

  void tick() {
    std::erase_if(running, [&](const Running& r) { return r.ends <= now; });
    std::set<int> held;
    for (const auto& r : running) held.insert(r.gpus.begin(), r.gpus.end());
    auto unavailable = held;
    unavailable.insert(quarantined.begin(), quarantined.end());
    QueuePass pass(topology, unavailable);
    std::set<int> granted_now;
    std::set<int> backfilled;  // granted behind the head
    bool head_seen = false;
    std::deque<std::size_t> still;
    for (auto id : queue) {
      auto& job = jobs[id];
      auto decision = pass.place(job.request);
      if (decision.verdict != Verdict::granted) {
        ASSERT_EQ(decision.verdict, Verdict::wait) << decision.reason;
        if (!head_seen) {
          // The head waits only when too few GPUs are free.
          head_seen = true;
          int free = static_cast<int>(inventory.gpus.size()) -
                     static_cast<int>(unavailable.size() + granted_now.size());
          ASSERT_LT(free, job.request.count) << "at " << now;
        }
        still.push_back(id);
        continue;
      }
      ASSERT_EQ(static_cast<int>(decision.gpus.size()), job.request.count);
      for (int g : decision.gpus) {
        ASSERT_FALSE(held.contains(g)) << "GPU " << g << " granted twice at " << now;
        ASSERT_FALSE(quarantined.contains(g)) << "quarantined GPU " << g << " granted";
        ASSERT_TRUE(granted_now.insert(g).second) << "GPU " << g << " granted twice at " << now;
        if (head_seen) backfilled.insert(g);
      }
      job.started_at = now;
      running.push_back({id, decision.gpus, now + job.duration});
    }
    // The head's reservation may hold GPUs granted ahead of it in this pass (they count as busy),
    // never one granted behind it.
    for (int g : pass.reserved())
      ASSERT_FALSE(backfilled.contains(g)) << "reserved GPU " << g << " was backfilled";
    queue = std::move(still);
    ++now;
  }
};

GpuRequest gpus(int count) {
  GpuRequest request;
  request.count = count;
  return request;
}

// Jobs of 1, 2, 4 or 8 GPUs (now and then `max_count`) lasting 1 to 20 ticks arrive at a mean
// rate of `arrivals_per_tick`, a little more than the host can run, so that a queue builds up.
void run_until_drained(Simulation& sim, std::mt19937& rng, int jobs, int max_count,
                       double arrivals_per_tick) {
  int submitted = 0;
  std::poisson_distribution<int> arrivals(arrivals_per_tick);
  while ((submitted < jobs || !sim.queue.empty() || !sim.running.empty()) && sim.now < 100000) {
    for (int i = arrivals(rng); i > 0 && submitted < jobs; --i, ++submitted) {
      int count = 1 << uniform_int(rng, 0, 3);
      if (rng() % 50 == 0) count = max_count;
      sim.jobs.push_back({gpus(count), uniform_int(rng, 1, 20), sim.now});
      sim.queue.push_back(sim.jobs.size() - 1);
    }
    sim.tick();
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(QueuePassSimulation, NoDoubleGrantAndEveryJobStartsOnTheEightGpuHost) {
  auto inv = two_islands();
  std::mt19937 rng(3);
  Simulation sim(inv);
  run_until_drained(sim, rng, 1500, 8, 0.25);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(sim.queue.empty());
  for (const auto& job : sim.jobs) ASSERT_GE(job.started_at, job.queued_at);
}

TEST(QueuePassSimulation, NoDoubleGrantAndEveryJobStartsOnAGeneratedHost) {
  // 256 GPUs in 32 islands, two of them quarantined; 64-GPU jobs now and then.
  auto inv = generated_inventory({32, 8, 4, LinkKind::nvlink});
  std::mt19937 rng(11);
  Simulation sim(inv);
  sim.quarantined = {5, 200};
  run_until_drained(sim, rng, 8000, 64, 8);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(sim.queue.empty());
  for (const auto& job : sim.jobs) ASSERT_GE(job.started_at, job.queued_at);
}

TEST(QueuePassSimulation, LargeJobsStartUnderAnEndlessStreamOfSmallOnes) {
  // Small jobs keep the host nearly full (about 80% of its GPU-time) and there is always one that
  // would fit in the GPUs a large job waits for; every large job queued among them must still
  // start, in queue order.
  auto inv = generated_inventory({8, 8, 2, LinkKind::nvlink});
  std::mt19937 rng(5);
  Simulation sim(inv);
  std::vector<std::size_t> large;
  for (int t = 0; t < 600; ++t) {
    for (int i = 0; i < 4; ++i) {
      sim.jobs.push_back({gpus(1 << uniform_int(rng, 0, 2)), uniform_int(rng, 1, 10), sim.now});
      sim.queue.push_back(sim.jobs.size() - 1);
    }
    if (t % 50 == 0) {
      sim.jobs.push_back({gpus(t % 100 == 0 ? 64 : 24), 5, sim.now});
      sim.queue.push_back(sim.jobs.size() - 1);
      large.push_back(sim.jobs.size() - 1);
    }
    sim.tick();
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_FALSE(large.empty());
  // The last large job may still wait behind the jobs ahead of it; each earlier one started, in
  // order, soon.
  int last_start = -1;
  for (std::size_t i = 0; i + 1 < large.size(); ++i) {
    const auto& job = sim.jobs[large[i]];
    ASSERT_GE(job.started_at, 0) << "large job " << i << " queued at " << job.queued_at;
    EXPECT_GT(job.started_at, last_start);
    // Small jobs run at most 10 ticks and the host is below capacity: a large job waits for
    // about the jobs running when it became the head (simulated ticks, deterministic).
    EXPECT_LE(job.started_at - job.queued_at, 20) << "large job " << i;
    last_start = job.started_at;
  }
}

}  // namespace
}  // namespace kiln::gpu
