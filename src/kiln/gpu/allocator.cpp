#include "kiln/gpu/allocator.h"

#include <algorithm>
#include <cctype>
#include <compare>
#include <functional>
#include <optional>
#include <span>
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

// Per GPU, 1 when busy; empty when no GPU is.
using BusyFlags = std::span<const std::uint8_t>;

bool is_busy(BusyFlags busy, int gpu) { return !busy.empty() && busy[gpu] != 0; }

// Lower is better, compared member by member (allocator.h gives the order).
struct Score {
  int worst = 0;
  int sum = 0;
  int busy = 0;
  int left = 0;           // free GPUs left in the islands the set takes from
  std::vector<int> gpus;  // ascending
  auto operator<=>(const Score&) const = default;
};

Score score_of(const Topology& topology, std::vector<int> set,
               const std::vector<int>& free_in_island, BusyFlags busy) {
  Score score;
  std::sort(set.begin(), set.end());
  for (std::size_t i = 0; i < set.size(); ++i) {
    for (std::size_t j = i + 1; j < set.size(); ++j) {
      int rank = topology.rank(set[i], set[j]);
      score.worst = std::max(score.worst, rank);
      score.sum += rank;
    }
  }
  // Free GPUs left in the islands this set touches (fewer: a tighter fit).
  std::vector<std::pair<int, int>> taken;  // island, free GPUs of the set in it
  for (int g : set) {
    if (is_busy(busy, g)) {
      ++score.busy;
      continue;
    }
    int island = topology.island(g);
    auto it = std::find_if(taken.begin(), taken.end(),
                           [&](const auto& entry) { return entry.first == island; });
    if (it == taken.end())
      taken.emplace_back(island, 1);
    else
      ++it->second;
  }
  for (auto [island, n] : taken) score.left += free_in_island[island] - n;
  score.gpus = std::move(set);
  return score;
}

void keep_best(std::optional<Score>& best, Score score) {
  if (!best || score < *best) best = std::move(score);
}

// The reference search, for any wiring: greedy from every candidate as a seed, adding the GPU
// whose worst and summed link ranks to the set so far are lowest (then not busy, then best fit,
// then index); the best-scoring set wins. The ranks of each candidate to the set are kept up to
// date as GPUs are added, so a seed costs O(wanted · candidates).
std::vector<int> best_set_by_gpu(const Topology& topology, const std::vector<int>& candidates,
                                 int wanted, BusyFlags busy,
                                 const std::vector<int>& free_in_island) {
  const auto count = candidates.size();
  std::vector<int> worst(count), sum(count);
  std::vector<std::uint8_t> used(count);
  std::optional<Score> best;
  for (std::size_t seed = 0; seed < count; ++seed) {
    std::fill(worst.begin(), worst.end(), 0);
    std::fill(sum.begin(), sum.end(), 0);
    std::fill(used.begin(), used.end(), 0);
    std::vector<int> set;
    auto add = [&](std::size_t i) {
      used[i] = 1;
      set.push_back(candidates[i]);
      for (std::size_t j = 0; j < count; ++j) {
        int rank = topology.rank(candidates[i], candidates[j]);
        worst[j] = std::max(worst[j], rank);
        sum[j] += rank;
      }
    };
    add(seed);
    while (static_cast<int>(set.size()) < wanted) {
      std::size_t pick = count;
      std::tuple<int, int, int, int, int> pick_key{};
      for (std::size_t j = 0; j < count; ++j) {
        if (used[j]) continue;
        int g = candidates[j];
        std::tuple<int, int, int, int, int> key{worst[j], sum[j], is_busy(busy, g) ? 1 : 0,
                                                free_in_island[topology.island(g)], g};
        if (pick == count || key < pick_key) {
          pick = j;
          pick_key = key;
        }
      }
      add(pick);
    }
    keep_best(best, score_of(topology, std::move(set), free_in_island, busy));
  }
  return std::move(best->gpus);
}

// The same choice on an island-uniform host (topology.h), searched island by island. Why it is
// the same:
//  - the candidates of one island have the same ranks to any set, the same island and the same
//    free count, so the greedy takes an island's candidates not busy first, then busy ones, each
//    in index order: its "order";
//  - from a seed in island I, every other candidate of I has rank 0 to the set and any GPU
//    outside I has rank >= 1, so the greedy first takes I's candidates;
//  - so when I has at least `wanted` candidates, the best of its seeds is the first in its order
//    (it gives the first `wanted` of that order, the fewest busy, then the lowest indexes), and
//    only such islands reach worst rank 0; when none has, every seed of I takes all of I and then
//    goes on the same way, so one greedy run per island gives what all its seeds give.
std::vector<int> best_set_by_island(const Topology& topology, const std::vector<int>& candidates,
                                    int wanted, BusyFlags busy,
                                    const std::vector<int>& free_in_island) {
  // The candidates of each island in its order, in one flat array.
  const int islands = topology.island_count();
  std::vector<int> count(islands, 0), not_busy(islands, 0);
  for (int g : candidates) {
    ++count[topology.island(g)];
    if (!is_busy(busy, g)) ++not_busy[topology.island(g)];
  }
  std::vector<int> active;  // islands with candidates
  std::vector<int> start(islands, 0);
  int offset = 0;
  for (int i = 0; i < islands; ++i) {
    if (count[i] == 0) continue;
    active.push_back(i);
    start[i] = offset;
    offset += count[i];
  }
  std::vector<int> ordered(candidates.size());
  {
    std::vector<int> next_free = start, next_busy(islands);
    for (int i : active) next_busy[i] = start[i] + not_busy[i];
    for (int g : candidates) {
      int i = topology.island(g);
      ordered[is_busy(busy, g) ? next_busy[i]++ : next_free[i]++] = g;
    }
  }

  std::optional<Score> best;
  for (int i : active) {
    if (count[i] < wanted) continue;
    std::vector<int> set(ordered.begin() + start[i], ordered.begin() + start[i] + wanted);
    keep_best(best, score_of(topology, std::move(set), free_in_island, busy));
  }
  if (best) return std::move(best->gpus);

  // No island holds the request: one greedy run per island, at the level of islands. Seeds are
  // tried from the fullest island, and an island whose bound (its candidates taken, the rest at
  // its nearest other island's rank) is already worse than the best set is skipped.
  const auto n_active = active.size();
  std::vector<std::size_t> seeds(n_active);
  for (std::size_t k = 0; k < n_active; ++k) seeds[k] = k;
  std::stable_sort(seeds.begin(), seeds.end(), [&](std::size_t x, std::size_t y) {
    return count[active[x]] > count[active[y]];
  });
  std::vector<int> worst(n_active), sum(n_active), taken(n_active);
  for (std::size_t seed : seeds) {
    const int home = active[seed];
    int nearest = 1 << 20;
    for (std::size_t k = 0; k < n_active; ++k)
      if (k != seed) nearest = std::min(nearest, topology.island_rank(home, active[k]));
    const int rest = wanted - count[home];
    if (best && (nearest > best->worst ||
                 (nearest == best->worst && count[home] * rest * nearest > best->sum)))
      continue;

    std::fill(worst.begin(), worst.end(), 0);
    std::fill(sum.begin(), sum.end(), 0);
    std::fill(taken.begin(), taken.end(), 0);
    std::vector<int> set;
    auto add = [&](std::size_t k, int how_many) {
      for (int t = 0; t < how_many; ++t) set.push_back(ordered[start[active[k]] + taken[k]++]);
      for (std::size_t j = 0; j < n_active; ++j) {
        int rank = topology.island_rank(active[k], active[j]);
        worst[j] = std::max(worst[j], rank);
        sum[j] += rank * how_many;
      }
    };
    add(seed, count[home]);
    while (static_cast<int>(set.size()) < wanted) {
      std::size_t pick = n_active;
      std::tuple<int, int, int, int, int> pick_key{};
      for (std::size_t k = 0; k < n_active; ++k) {
        if (taken[k] == count[active[k]]) continue;
        int g = ordered[start[active[k]] + taken[k]];
        std::tuple<int, int, int, int, int> key{worst[k], sum[k], is_busy(busy, g) ? 1 : 0,
                                                free_in_island[active[k]], g};
        if (pick == n_active || key < pick_key) {
          pick = k;
          pick_key = key;
        }
      }
      add(pick, 1);
    }
    keep_best(best, score_of(topology, std::move(set), free_in_island, busy));
  }
  return std::move(best->gpus);
}

// The best `wanted` GPUs among `candidates` (ascending, at least `wanted` of them; see allocator.h
// for the order). Busy GPUs may be chosen but cost: after the link ranks, a set with fewer busy
// GPUs wins, so that a reservation waits for as few running jobs as it can.
std::vector<int> best_set(const Topology& topology, const std::vector<int>& candidates, int wanted,
                          BusyFlags busy) {
  std::vector<int> free_in_island(topology.island_count(), 0);
  for (int g : candidates)
    if (!is_busy(busy, g)) ++free_in_island[topology.island(g)];
  if (topology.uniform())
    return best_set_by_island(topology, candidates, wanted, busy, free_in_island);
  return best_set_by_gpu(topology, candidates, wanted, busy, free_in_island);
}

std::vector<int> eligible_gpus(const Inventory& inventory, const GpuRequest& request) {
  std::vector<int> eligible;
  for (const auto& gpu : inventory.gpus)
    if (gpu_matches(gpu, request)) eligible.push_back(gpu.index);
  return eligible;
}

int wanted_of(const GpuRequest& request, const std::vector<int>& eligible) {
  return request.all ? static_cast<int>(eligible.size()) : request.count;
}

// The `never` reason, or empty when some state of the host satisfies the request.
std::string never_reason(const Inventory& inventory, const GpuRequest& request,
                         const std::vector<int>& eligible, int wanted) {
  if (eligible.empty())
    return fmt::format("never satisfiable on this host: none of its {} GPUs matches '{}'",
                       inventory.gpus.size(), request.to_string());
  if (static_cast<int>(eligible.size()) < wanted)
    return fmt::format(
        "never satisfiable on this host: {} GPUs requested ('{}'), {} of its {} GPUs match", wanted,
        request.to_string(), eligible.size(), inventory.gpus.size());
  return {};
}

std::string wait_reason(int wanted, const std::string& request, std::size_t free,
                        std::size_t eligible) {
  return fmt::format("not now: {} GPUs requested ('{}'), {} of {} matching GPUs free", wanted,
                     request, free, eligible);
}

std::vector<std::uint8_t> flags_of(const std::set<int>& gpus, int size) {
  std::vector<std::uint8_t> flags(size, 0);
  for (int g : gpus)
    if (g >= 0 && g < size) flags[g] = 1;
  return flags;
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
  return choose_gpus(Topology(inventory), busy, request);
}

Decision choose_gpus(const Topology& topology, const std::set<int>& busy,
                     const GpuRequest& request) {
  const auto& inventory = topology.inventory();
  Decision decision;
  if (!request.wants_gpus()) {
    decision.verdict = Verdict::granted;
    return decision;
  }
  auto eligible = eligible_gpus(inventory, request);
  const auto wanted = wanted_of(request, eligible);
  if (auto reason = never_reason(inventory, request, eligible, wanted); !reason.empty()) {
    decision.verdict = Verdict::never;
    decision.reason = std::move(reason);
    return decision;
  }

  std::vector<int> free;
  for (int g : eligible)
    if (!busy.contains(g) && free_mib(inventory.gpus[g]) >= request.min_free_mib) free.push_back(g);
  if (static_cast<int>(free.size()) < wanted) {
    decision.verdict = Verdict::wait;
    decision.reason = wait_reason(wanted, request.to_string(), free.size(), eligible.size());
    return decision;
  }

  decision.verdict = Verdict::granted;
  decision.gpus = best_set(topology, free, wanted, {});
  return decision;
}

std::vector<int> reserve_gpus(const Inventory& inventory, const std::set<int>& busy,
                              const GpuRequest& request) {
  return reserve_gpus(Topology(inventory), busy, request);
}

std::vector<int> reserve_gpus(const Topology& topology, const std::set<int>& busy,
                              const GpuRequest& request) {
  if (!request.wants_gpus()) return {};
  auto eligible = eligible_gpus(topology.inventory(), request);
  const auto wanted = wanted_of(request, eligible);
  if (eligible.empty() || static_cast<int>(eligible.size()) < wanted) return {};
  auto flags = flags_of(busy, topology.size());
  return best_set(topology, eligible, wanted, flags);
}

// What a pass knows about one distinct request.
struct QueuePass::Shape {
  std::vector<int> eligible;  // GPUs that match
  int wanted = 0;
  std::optional<Decision> never;
  std::vector<std::uint8_t> usable;  // per GPU: eligible, with enough free memory now
  std::size_t free = 0;              // usable GPUs not blocked
  std::string label;                 // request.to_string()
  std::optional<Decision> wait;      // the last wait decision, for `wait_free` free GPUs
  std::size_t wait_free = 0;
};

std::size_t QueuePass::ShapeHash::operator()(const GpuRequest& request) const {
  std::size_t h = std::hash<int>{}(request.count) * 31 + (request.all ? 1 : 0);
  for (const auto* text : {&request.vendor, &request.model, &request.arch})
    h = h * 1000003 ^ std::hash<std::string>{}(*text);
  return h * 31 ^ std::hash<std::uint64_t>{}(request.min_free_mib);
}

bool QueuePass::ShapeEqual::operator()(const GpuRequest& a, const GpuRequest& b) const {
  return a.count == b.count && a.all == b.all && a.vendor == b.vendor && a.model == b.model &&
         a.arch == b.arch && a.min_free_mib == b.min_free_mib;
}

QueuePass::QueuePass(const Inventory& inventory, std::set<int> unavailable)
    : own_topology_(std::make_unique<Topology>(inventory)), topology_(*own_topology_) {
  unavailable_ = flags_of(unavailable, topology_.size());
  blocked_ = unavailable_;
}

QueuePass::QueuePass(const Topology& topology, std::set<int> unavailable) : topology_(topology) {
  unavailable_ = flags_of(unavailable, topology_.size());
  blocked_ = unavailable_;
}

QueuePass::~QueuePass() = default;

QueuePass::Shape& QueuePass::shape_of(const GpuRequest& request) {
  auto it = shapes_.find(request);
  if (it != shapes_.end()) return *it->second;
  const auto& inventory = topology_.inventory();
  auto shape = std::make_unique<Shape>();
  shape->eligible = eligible_gpus(inventory, request);
  shape->wanted = wanted_of(request, shape->eligible);
  if (auto reason = never_reason(inventory, request, shape->eligible, shape->wanted);
      !reason.empty()) {
    shape->never = Decision{Verdict::never, {}, std::move(reason)};
  } else {
    shape->usable.assign(topology_.size(), 0);
    for (int g : shape->eligible) {
      if (free_mib(inventory.gpus[g]) < request.min_free_mib) continue;
      shape->usable[g] = 1;
      if (!blocked_[g]) ++shape->free;
    }
    shape->label = request.to_string();
  }
  return *shapes_.emplace(request, std::move(shape)).first->second;
}

void QueuePass::block(int gpu) {
  if (blocked_[gpu]) return;
  blocked_[gpu] = 1;
  for (auto& [request, shape] : shapes_)
    if (!shape->usable.empty() && shape->usable[gpu]) --shape->free;
}

Decision QueuePass::place(const GpuRequest& request) {
  if (!request.wants_gpus()) return Decision{Verdict::granted, {}, {}};
  auto& shape = shape_of(request);
  if (shape.never) return *shape.never;

  if (static_cast<int>(shape.free) < shape.wanted) {
    if (!shape.wait || shape.wait_free != shape.free) {
      shape.wait =
          Decision{Verdict::wait,
                   {},
                   wait_reason(shape.wanted, shape.label, shape.free, shape.eligible.size())};
      shape.wait_free = shape.free;
    }
    auto decision = *shape.wait;  // a copy: block() below may change the shape's counts
    if (!has_head_) {
      // The first job that waits: it keeps its GPUs from later jobs until they come free.
      has_head_ = true;
      reserved_ = best_set(topology_, shape.eligible, shape.wanted, unavailable_);
      for (int g : reserved_) block(g);
    }
    return decision;
  }

  std::vector<int> free;
  free.reserve(shape.free);
  for (int g : shape.eligible)
    if (shape.usable[g] && !blocked_[g]) free.push_back(g);
  Decision decision{Verdict::granted, best_set(topology_, free, shape.wanted, {}), {}};
  for (int g : decision.gpus) {
    unavailable_[g] = 1;
    block(g);
  }
  return decision;
}

}  // namespace kiln::gpu
