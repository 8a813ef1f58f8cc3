#include "kiln/perf/baseline.h"

#include <cmath>
#include <vector>

#include "kiln/perf/change_points.h"

namespace kiln::perf {
namespace {

constexpr std::size_t k_min_for_outliers = 10;
constexpr double k_far = 5;

}  // namespace

PredictionInterval baseline_interval(std::span<const double> levels, double confidence) {
  PredictionInterval interval;
  if (levels.empty()) return interval;
  // Segments: [starts[i], starts[i + 1]).
  std::vector<std::size_t> starts = {0};
  if (levels.size() >= 2 * static_cast<std::size_t>(ChangePointOptions{}.min_segment))
    for (const auto& point : find_change_points(levels)) starts.push_back(point.index);
  starts.push_back(levels.size());
  interval.start = starts[starts.size() - 2];
  // Distances from the segment medians, and the fence they give.
  std::vector<double> residuals;
  residuals.reserve(levels.size());
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
    auto segment = levels.subspan(starts[s], starts[s + 1] - starts[s]);
    const double center = median(segment);
    for (double level : segment) residuals.push_back(level - center);
  }
  if (levels.size() >= k_min_for_outliers) {
    std::vector<double> distances;
    for (double r : residuals) distances.push_back(std::fabs(r));
    // robust_sigma of values centred on 0 per segment: 1.4826 × the median distance (the
    // standard deviation when more than half are equal).
    double spread = 1.4826 * median(distances);
    if (spread == 0) spread = standard_deviation(residuals);
    interval.fence = k_far * spread;
  }
  // Pooled spread of the kept levels about their segments' means.
  double squares = 0;
  int kept_total = 0, segments = 0;
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
    double sum = 0;
    int kept = 0;
    for (std::size_t i = starts[s]; i < starts[s + 1]; ++i)
      if (interval.fence == 0 || std::fabs(residuals[i]) <= interval.fence) {
        sum += levels[i];
        ++kept;
      }
    if (kept == 0) continue;
    const double mean = sum / kept;
    for (std::size_t i = starts[s]; i < starts[s + 1]; ++i)
      if (interval.fence == 0 || std::fabs(residuals[i]) <= interval.fence)
        squares += (levels[i] - mean) * (levels[i] - mean);
    kept_total += kept;
    ++segments;
    if (s + 2 == starts.size()) {
      interval.center = mean;
      interval.n = kept;
    }
  }
  interval.outliers = static_cast<int>(levels.size()) - kept_total;
  for (double r : residuals)
    if (interval.fence > 0 && std::fabs(r) > interval.fence) interval.outlying.push_back(r);
  interval.df = kept_total - segments;
  if (interval.df < 1) {
    interval.lower = interval.upper = interval.center;
    return interval;
  }
  interval.sigma = std::sqrt(squares / interval.df);
  const double t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, interval.df);
  const double half = t * interval.sigma * std::sqrt(1.0 + 1.0 / interval.n);
  interval.lower = interval.center - half;
  interval.upper = interval.center + half;
  return interval;
}

}  // namespace kiln::perf
