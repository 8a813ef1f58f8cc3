#pragma once
// The GPU allocator as it was before the Topology (commit c2b78b9), kept verbatim as a reference:
// allocator_test.cpp checks that the allocator makes the same choices on random hosts, and
// bench/gpu_alloc_bench.cpp measures it as the baseline. Not part of any library.
//
// Greedy from every free GPU as a seed, asking Inventory::connection (a walk over the link list)
// for every pair it looks at: O(free² · wanted²) calls per decision.

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/gpu/allocator.h"

namespace kiln::gpu::naive {

inline std::uint64_t free_mib(const GpuInfo& gpu) {
  return gpu.memory_total_mib > gpu.memory_used_mib ? gpu.memory_total_mib - gpu.memory_used_mib
                                                    : 0;
}

// Connected components over fabric links (NVLink, XGMI): the "islands".
inline std::vector<int> fabric_islands(const Inventory& inventory) {
  std::vector<int> island(inventory.gpus.size());
  std::iota(island.begin(), island.end(), 0);
  auto find = [&](int x) {
    while (island[x] != x) x = island[x] = island[island[x]];
    return x;
  };
  for (const auto& link : inventory.links) {
    if (link_rank(link.kind) != 0) continue;
    if (link.a < 0 || link.b < 0 || static_cast<std::size_t>(link.a) >= island.size() ||
        static_cast<std::size_t>(link.b) >= island.size())
      continue;
    island[find(link.a)] = find(link.b);
  }
  for (std::size_t i = 0; i < island.size(); ++i) island[i] = find(static_cast<int>(i));
  return island;
}

// Lower is better, compared as a tuple.
using Score = std::tuple<int, int, int, int, std::vector<int>>;

inline Score score_of(const Inventory& inventory, const std::vector<int>& set,
                      const std::vector<int>& island, std::map<int, int>& free_in_island,
                      const std::set<int>& busy) {
  int worst = 0, sum = 0;
  for (std::size_t i = 0; i < set.size(); ++i) {
    for (std::size_t j = i + 1; j < set.size(); ++j) {
      int rank = link_rank(inventory.connection(set[i], set[j]));
      worst = std::max(worst, rank);
      sum += rank;
    }
  }
  // Free GPUs left in the islands this set touches (fewer: a tighter fit).
  std::map<int, int> taken;
  int busy_count = 0;
  for (int g : set) {
    if (busy.contains(g)) {
      ++busy_count;
    } else {
      ++taken[island[g]];
    }
  }
  int left = 0;
  for (auto [id, n] : taken) left += free_in_island[id] - n;
  auto sorted = set;
  std::sort(sorted.begin(), sorted.end());
  return {worst, sum, busy_count, left, sorted};
}

// The best `wanted` GPUs among `candidates` (see allocator.h for the order). GPUs in `busy` may be
// chosen but cost: after the link ranks, a set with fewer busy GPUs wins, so that a reservation
// waits for as few running jobs as it can.
inline std::vector<int> best_set(const Inventory& inventory, const std::vector<int>& candidates,
                                 int wanted, const std::set<int>& busy) {
  // gpu:all on a host where nothing matches wants 0 of 0: no seed, no set (dereferencing the
  // empty `best` below was found by ASan in the property test).
  if (wanted <= 0 || candidates.empty()) return {};
  auto island = fabric_islands(inventory);
  std::map<int, int> free_in_island;
  for (int g : candidates)
    if (!busy.contains(g)) ++free_in_island[island[g]];

  // Greedy from every candidate as a seed: add the GPU whose worst and summed link ranks to the
  // set so far are lowest (then not busy, then best fit, then index). Keep the best-scoring set.
  std::optional<Score> best;
  for (int seed : candidates) {
    std::vector<int> set{seed};
    std::vector<bool> used(inventory.gpus.size(), false);
    used[seed] = true;
    while (static_cast<int>(set.size()) < wanted) {
      int pick = -1;
      std::tuple<int, int, int, int, int> pick_key{};
      for (int g : candidates) {
        if (used[g]) continue;
        int worst = 0, sum = 0;
        for (int s : set) {
          int rank = link_rank(inventory.connection(s, g));
          worst = std::max(worst, rank);
          sum += rank;
        }
        std::tuple<int, int, int, int, int> key{worst, sum, busy.contains(g) ? 1 : 0,
                                                free_in_island[island[g]], g};
        if (pick < 0 || key < pick_key) {
          pick = g;
          pick_key = key;
        }
      }
      used[pick] = true;
      set.push_back(pick);
    }
    auto score = score_of(inventory, set, island, free_in_island, busy);
    if (!best || score < *best) best = std::move(score);
  }
  return std::get<4>(*best);
}

inline Decision naive_choose_gpus(const Inventory& inventory, const std::set<int>& busy,
                                  const GpuRequest& request) {
  Decision decision;
  if (!request.wants_gpus()) {
    decision.verdict = Verdict::granted;
    return decision;
  }
  std::vector<int> eligible;
  for (const auto& gpu : inventory.gpus)
    if (kiln::gpu::gpu_matches(gpu, request)) eligible.push_back(gpu.index);
  const auto wanted = request.all ? static_cast<int>(eligible.size()) : request.count;
  if (eligible.empty() || static_cast<int>(eligible.size()) < wanted) {
    decision.verdict = Verdict::never;
    if (eligible.empty())
      decision.reason =
          fmt::format("never satisfiable on this host: none of its {} GPUs matches '{}'",
                      inventory.gpus.size(), request.to_string());
    else
      decision.reason = fmt::format(
          "never satisfiable on this host: {} GPUs requested ('{}'), {} of its {} GPUs match",
          wanted, request.to_string(), eligible.size(), inventory.gpus.size());
    return decision;
  }

  std::vector<int> free;
  for (int g : eligible)
    if (!busy.contains(g) && free_mib(inventory.gpus[g]) >= request.min_free_mib) free.push_back(g);
  if (static_cast<int>(free.size()) < wanted) {
    decision.verdict = Verdict::wait;
    decision.reason = fmt::format("not now: {} GPUs requested ('{}'), {} of {} matching GPUs free",
                                  wanted, request.to_string(), free.size(), eligible.size());
    return decision;
  }

  decision.verdict = Verdict::granted;
  decision.gpus = best_set(inventory, free, wanted, {});
  return decision;
}

inline std::vector<int> naive_reserve_gpus(const Inventory& inventory, const std::set<int>& busy,
                                           const GpuRequest& request) {
  if (!request.wants_gpus()) return {};
  std::vector<int> eligible;
  for (const auto& gpu : inventory.gpus)
    if (kiln::gpu::gpu_matches(gpu, request)) eligible.push_back(gpu.index);
  const auto wanted = request.all ? static_cast<int>(eligible.size()) : request.count;
  if (static_cast<int>(eligible.size()) < wanted) return {};
  return best_set(inventory, eligible, wanted, busy);
}

// QueuePass as it was: every place() is a full naive_choose_gpus against the blocked set.
class NaiveQueuePass {
 public:
  NaiveQueuePass(const Inventory& inventory, std::set<int> unavailable);
  Decision place(const GpuRequest& request);
  const std::vector<int>& reserved() const { return reserved_; }

 private:
  const Inventory& inventory_;
  std::set<int> unavailable_;
  std::set<int> blocked_;
  std::vector<int> reserved_;
  bool has_head_ = false;
};

inline NaiveQueuePass::NaiveQueuePass(const Inventory& inventory, std::set<int> unavailable)
    : inventory_(inventory), unavailable_(std::move(unavailable)), blocked_(unavailable_) {}

inline Decision NaiveQueuePass::place(const GpuRequest& request) {
  auto decision = naive_choose_gpus(inventory_, blocked_, request);
  if (decision.verdict == Verdict::granted) {
    unavailable_.insert(decision.gpus.begin(), decision.gpus.end());
    blocked_.insert(decision.gpus.begin(), decision.gpus.end());
    return decision;
  }
  if (decision.verdict == Verdict::never || has_head_) return decision;
  // The first job that waits: it keeps its GPUs from later jobs until they come free.
  has_head_ = true;
  reserved_ = naive_reserve_gpus(inventory_, unavailable_, request);
  blocked_.insert(reserved_.begin(), reserved_.end());
  return decision;
}

}  // namespace kiln::gpu::naive
