#include "kiln/perf/change_points.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kiln/perf/stats.h"

namespace kiln::perf {
namespace {

// Ranks of `values` (1-based, ties sharing the mean of their ranks).
std::vector<double> ranks_of(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

struct Split {
  std::size_t at = 0;
  double statistic = 0;
};

// The split with the largest standardized rank-sum statistic.
Split best_split(std::span<const double> ranks, std::size_t min_segment) {
  const double n = static_cast<double>(ranks.size());
  Split best;
  double prefix = 0;
  for (std::size_t k = 1; k < ranks.size(); ++k) {
    prefix += ranks[k - 1];
    if (k < min_segment || ranks.size() - k < min_segment) continue;
    const double kd = static_cast<double>(k);
    double z = std::fabs(prefix - kd * (n + 1) / 2.0) / std::sqrt(kd * (n - kd) * (n + 1) / 12.0);
    if (z > best.statistic) best = {k, z};
  }
  return best;
}

void search(std::span<const double> values, std::size_t offset, const ChangePointOptions& options,
            std::mt19937_64& random, std::vector<ChangePoint>& found) {
  const auto min_segment = static_cast<std::size_t>(std::max(1, options.min_segment));
  if (values.size() < 2 * min_segment) return;
  auto ranks = ranks_of(values);
  auto observed = best_split(ranks, min_segment);
  if (observed.at == 0) return;
  int as_large = 0;
  auto shuffled = ranks;
  // Once as_large + 1 reaches alpha · (permutations + 1), p cannot fall below alpha: stop (a
  // series without a step is settled after a handful of permutations).
  const double enough = options.alpha * (options.permutations + 1.0);
  for (int i = 0; i < options.permutations && as_large + 1.0 < enough; ++i) {
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    if (best_split(shuffled, min_segment).statistic >= observed.statistic - 1e-12) ++as_large;
  }
  // The observed arrangement counts as one of the permutations: p is never 0.
  double p = (as_large + 1.0) / (options.permutations + 1.0);
  if (p >= options.alpha) return;
  auto left = values.subspan(0, observed.at);
  auto right = values.subspan(observed.at);
  ChangePoint point;
  point.index = offset + observed.at;
  point.p_value = p;
  search(left, offset, options, random, found);
  found.push_back(point);
  search(right, offset + observed.at, options, random, found);
}

}  // namespace

std::vector<ChangePoint> find_change_points(std::span<const double> values,
                                            const ChangePointOptions& options) {
  std::mt19937_64 random(options.seed);
  std::vector<ChangePoint> found;
  search(values, 0, options, random, found);
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  // Levels between neighbouring change points; drop the steps below min_change.
  std::vector<ChangePoint> reported;
  for (std::size_t i = 0; i < found.size(); ++i) {
    std::size_t begin = i == 0 ? 0 : found[i - 1].index;
    std::size_t end = i + 1 < found.size() ? found[i + 1].index : values.size();
    auto& point = found[i];
    point.before = median(values.subspan(begin, point.index - begin));
    point.after = median(values.subspan(point.index, end - point.index));
    point.change = point.before != 0 ? (point.after - point.before) / std::fabs(point.before) : 0;
    if (std::fabs(point.change) >= options.min_change) reported.push_back(point);
  }
  return reported;
}

}  // namespace kiln::perf
