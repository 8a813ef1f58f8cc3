#include "kiln/gpu/allocator.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

namespace kiln::gpu {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::uint64_t free_mib(const GpuInfo& gpu) {
  return gpu.memory_total_mib > gpu.memory_used_mib ? gpu.memory_total_mib - gpu.memory_used_mib
                                                    : 0;
}

// Connected components over fabric links (NVLink, XGMI): the "islands".
std::vector<int> fabric_islands(const Inventory& inventory) {
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
using Score = std::tuple<int, int, int, std::vector<int>>;

Score score_of(const Inventory& inventory, const std::vector<int>& set,
               const std::vector<int>& island, const std::map<int, int>& free_in_island) {
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
  for (int g : set) ++taken[island[g]];
  int left = 0;
  for (auto [id, n] : taken) left += free_in_island.at(id) - n;
  auto sorted = set;
  std::sort(sorted.begin(), sorted.end());
  return {worst, sum, left, sorted};
}

}  // namespace

bool gpu_matches(const GpuInfo& gpu, const GpuRequest& request) {
  if (!request.vendor.empty() && gpu.vendor != request.vendor) return false;
  if (!request.arch.empty() && lowercase(gpu.arch) != request.arch) return false;
  if (!request.model.empty() &&
      lowercase(gpu.model).find(lowercase(request.model)) == std::string::npos)
    return false;
  if (gpu.memory_total_mib < request.min_free_mib) return false;
  return true;
}

Decision choose_gpus(const Inventory& inventory, const std::set<int>& busy,
                     const GpuRequest& request) {
  Decision decision;
  if (!request.wants_gpus()) {
    decision.verdict = Verdict::granted;
    return decision;
  }
  std::vector<int> eligible;
  for (const auto& gpu : inventory.gpus)
    if (gpu_matches(gpu, request)) eligible.push_back(gpu.index);
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

  auto island = fabric_islands(inventory);
  std::map<int, int> free_in_island;
  for (int g : free) ++free_in_island[island[g]];

  // Greedy from every free GPU as a seed: add the GPU whose worst and summed link ranks to the
  // set so far are lowest (then best fit, then index). Keep the best-scoring set of all seeds.
  std::optional<Score> best;
  for (int seed : free) {
    std::vector<int> set{seed};
    std::vector<bool> used(inventory.gpus.size(), false);
    used[seed] = true;
    while (static_cast<int>(set.size()) < wanted) {
      int pick = -1;
      std::tuple<int, int, int, int> pick_key{};
      for (int g : free) {
        if (used[g]) continue;
        int worst = 0, sum = 0;
        for (int s : set) {
          int rank = link_rank(inventory.connection(s, g));
          worst = std::max(worst, rank);
          sum += rank;
        }
        std::tuple<int, int, int, int> key{worst, sum, free_in_island[island[g]], g};
        if (pick < 0 || key < pick_key) {
          pick = g;
          pick_key = key;
        }
      }
      used[pick] = true;
      set.push_back(pick);
    }
    auto score = score_of(inventory, set, island, free_in_island);
    if (!best || score < *best) best = std::move(score);
  }
  decision.verdict = Verdict::granted;
  decision.gpus = std::get<3>(*best);
  return decision;
}

}  // namespace kiln::gpu
