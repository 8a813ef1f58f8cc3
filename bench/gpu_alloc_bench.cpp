// One scheduling pass over a queue of 10,000 GPU jobs (40% gpu:1, 30% gpu:2, 20% gpu:4, 10%
// gpu:8, in random order, fixed seed) on generated hosts of 64 to 1,024 GPUs in 8-GPU NVLink
// islands (src/kiln/gpu/testdata/generated_inventory.h), at several occupancies: the share of
// GPUs already held by running jobs, placed by the allocator and then partly released, so that
// the free GPUs are scattered over the islands as on a host that has been busy for a while.
//
// BM_QueuePass is the allocator (QueuePass with a Topology kept across passes, as a scheduler
// keeps it beside its inventory); BM_QueuePassBuildingTopology also builds the Topology in every
// pass; BM_NaiveQueuePass is the allocator as it was before the Topology
// (src/kiln/gpu/testdata/naive_allocator.h), on the hosts small enough for it to finish.
// Arguments: islands of 8 GPUs, occupancy in percent.
#include <benchmark/benchmark.h>

#include <random>
#include <set>
#include <vector>

#include "kiln/gpu/allocator.h"
#include "kiln/gpu/testdata/generated_inventory.h"
#include "kiln/gpu/testdata/naive_allocator.h"

namespace {

using namespace kiln::gpu;

constexpr int k_queue = 10000;

GpuRequest gpus(int count) {
  GpuRequest request;
  request.count = count;
  return request;
}

std::vector<GpuRequest> mixed_queue(int jobs, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<GpuRequest> queue;
  for (int i = 0; i < jobs; ++i) {
    auto roll = rng() % 10;
    queue.push_back(gpus(roll < 4 ? 1 : roll < 7 ? 2 : roll < 9 ? 4 : 8));
  }
  return queue;
}

// GPUs held by running jobs: jobs of the mix are granted until the host is full, then random jobs
// end until `percent` of the GPUs are held.
std::set<int> occupied(const Topology& topology, int percent, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int>> running;
  std::set<int> busy;
  for (const auto& request : mixed_queue(4 * topology.size(), seed)) {
    auto decision = choose_gpus(topology, busy, request);
    if (decision.verdict != Verdict::granted) continue;
    busy.insert(decision.gpus.begin(), decision.gpus.end());
    running.push_back(decision.gpus);
  }
  const auto target = static_cast<std::size_t>(topology.size()) * percent / 100;
  std::shuffle(running.begin(), running.end(), rng);
  while (busy.size() > target && !running.empty()) {
    for (int g : running.back()) busy.erase(g);
    running.pop_back();
  }
  return busy;
}

struct Setup {
  Inventory inventory;
  Topology topology;
  std::set<int> busy;
  std::vector<GpuRequest> queue;

  Setup(int islands, int percent)
      : inventory(generated_inventory({islands, 8, 4, LinkKind::nvlink})),
        topology(inventory),
        busy(occupied(topology, percent, 7)),
        queue(mixed_queue(k_queue, 1)) {}
};

void report(benchmark::State& state, const Setup& setup, int granted) {
  state.counters["gpus"] = static_cast<double>(setup.inventory.gpus.size());
  state.counters["busy"] = static_cast<double>(setup.busy.size());
  state.counters["granted"] = granted;
}

void BM_QueuePass(benchmark::State& state) {
  Setup setup(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  int granted = 0;
  for (auto _ : state) {
    QueuePass pass(setup.topology, setup.busy);
    granted = 0;
    for (const auto& request : setup.queue)
      granted += pass.place(request).verdict == Verdict::granted ? 1 : 0;
    benchmark::DoNotOptimize(pass.reserved().data());
  }
  report(state, setup, granted);
}

void BM_QueuePassBuildingTopology(benchmark::State& state) {
  Setup setup(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  int granted = 0;
  for (auto _ : state) {
    QueuePass pass(setup.inventory, setup.busy);
    granted = 0;
    for (const auto& request : setup.queue)
      granted += pass.place(request).verdict == Verdict::granted ? 1 : 0;
    benchmark::DoNotOptimize(pass.reserved().data());
  }
  report(state, setup, granted);
}

void BM_NaiveQueuePass(benchmark::State& state) {
  Setup setup(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  int granted = 0;
  for (auto _ : state) {
    naive::NaiveQueuePass pass(setup.inventory, setup.busy);
    granted = 0;
    for (const auto& request : setup.queue)
      granted += pass.place(request).verdict == Verdict::granted ? 1 : 0;
    benchmark::DoNotOptimize(pass.reserved().data());
  }
  report(state, setup, granted);
}

// Building the Topology of a host alone (its rank table is GPUs² bytes).
void BM_BuildTopology(benchmark::State& state) {
  auto inventory = generated_inventory({static_cast<int>(state.range(0)), 8, 4, LinkKind::nvlink});
  for (auto _ : state) {
    Topology topology(inventory);
    benchmark::DoNotOptimize(topology.island_count());
  }
  state.counters["gpus"] = static_cast<double>(inventory.gpus.size());
}

// One decision on the full 1,024-GPU host: a gpu:8 job at 50% occupancy (scattered free GPUs, so
// no island holds it: the search across islands), a gpu:4 job on an idle host, and a gpu:2 job at
// 90% occupancy, the one case the naive allocator finishes in seconds on this host.
void BM_ChooseGpus(benchmark::State& state) {
  Setup setup(128, static_cast<int>(state.range(0)));
  auto request = gpus(static_cast<int>(state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(choose_gpus(setup.topology, setup.busy, request));
  state.counters["busy"] = static_cast<double>(setup.busy.size());
}

void BM_NaiveChooseGpus(benchmark::State& state) {
  Setup setup(128, static_cast<int>(state.range(0)));
  auto request = gpus(static_cast<int>(state.range(1)));
  for (auto _ : state)
    benchmark::DoNotOptimize(naive::naive_choose_gpus(setup.inventory, setup.busy, request));
  state.counters["busy"] = static_cast<double>(setup.busy.size());
}

void occupancies(benchmark::internal::Benchmark* b, std::initializer_list<int> islands) {
  for (int i : islands)
    for (int percent : {0, 50, 90, 99}) b->Args({i, percent});
}

BENCHMARK(BM_QueuePass)->Apply([](auto* b) {
  occupancies(b, {8, 16, 32, 128});
}) -> Unit(benchmark::kMillisecond);
BENCHMARK(BM_QueuePassBuildingTopology)->Apply([](auto* b) {
  occupancies(b, {128});
}) -> Unit(benchmark::kMillisecond);
BENCHMARK(BM_NaiveQueuePass)->Apply([](auto* b) {
  occupancies(b, {8, 16, 32});
}) -> Unit(benchmark::kMillisecond) -> Iterations(1);
BENCHMARK(BM_BuildTopology)->Arg(8)->Arg(128)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChooseGpus)->Args({50, 8})->Args({0, 4})->Args({90, 2})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NaiveChooseGpus)->Args({90, 2})->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
