#include "kiln/gpu/topology.h"

#include <numeric>

namespace kiln::gpu {

namespace {

constexpr std::uint8_t k_no_link = 0xff;

}  // namespace

Topology::Topology(const Inventory& inventory)
    : inventory_(&inventory), size_(static_cast<int>(inventory.gpus.size())) {
  const auto n = static_cast<std::size_t>(size_);
  ranks_.assign(n * n, k_no_link);
  auto in_range = [&](int g) { return g >= 0 && g < size_; };

  // A listed link wins over the NUMA default even when it is worse (Inventory::connection).
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& link : inventory.links) {
    if (!in_range(link.a) || !in_range(link.b)) continue;
    auto rank = static_cast<std::uint8_t>(link_rank(link.kind));
    auto& ab = ranks_[link.a * n + link.b];
    auto& ba = ranks_[link.b * n + link.a];
    if (ab == k_no_link || rank < ab) ab = ba = rank;
    if (rank == 0) parent[find(link.a)] = find(link.b);
  }
  for (int a = 0; a < size_; ++a) {
    for (int b = a + 1; b < size_; ++b) {
      auto& ab = ranks_[a * n + b];
      if (ab != k_no_link) continue;
      int numa = inventory.gpus[a].numa_node;
      ab = ranks_[b * n + a] = static_cast<std::uint8_t>(link_rank(
          numa >= 0 && numa == inventory.gpus[b].numa_node ? LinkKind::numa : LinkKind::sys));
    }
    ranks_[a * n + a] = 0;
  }

  // Islands, numbered in the order of their lowest GPU.
  island_of_.assign(n, -1);
  std::vector<int> id_of_root(n, -1);
  for (int g = 0; g < size_; ++g) {
    int root = find(g);
    if (id_of_root[root] < 0) {
      id_of_root[root] = static_cast<int>(island_members_.size());
      island_members_.emplace_back();
    }
    island_of_[g] = id_of_root[root];
    island_members_[island_of_[g]].push_back(g);
  }

  // Uniform: the first GPU of each island speaks for all of it.
  const auto islands = island_members_.size();
  island_ranks_.assign(islands * islands, 0);
  for (std::size_t i = 0; i < islands; ++i)
    for (std::size_t j = 0; j < islands; ++j)
      if (i != j)
        island_ranks_[i * islands + j] = rank(island_members_[i][0], island_members_[j][0]);
  uniform_ = true;
  for (int a = 0; a < size_ && uniform_; ++a) {
    for (int b = a + 1; b < size_; ++b) {
      int expected = island_ranks_[island_of_[a] * islands + island_of_[b]];
      if (rank(a, b) != expected) {
        uniform_ = false;
        break;
      }
    }
  }
  if (!uniform_) island_ranks_.clear();
}

}  // namespace kiln::gpu
