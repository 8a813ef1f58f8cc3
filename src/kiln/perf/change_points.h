#pragma once
// Change points over a history: where did the level of a series step, even by a little at a
// time, and at which point (commit)?
//
// Method: binary segmentation with a rank statistic and permutation significance.
//   1. In a segment of n values, rank them (ties share ranks). For every split k the
//      standardized Mann-Whitney statistic of the left k against the right n-k is
//      Z(k) = (R_k - k(n+1)/2) / sqrt(k(n-k)(n+1)/12), R_k the left rank sum (a prefix sum,
//      so every split costs O(1)). The candidate is the split with the largest |Z(k)|.
//   2. Its significance is the share of random permutations of the segment whose largest
//      |Z| is at least as large (`permutations` of them, from a fixed seed, so the answer is
//      reproducible). Below `alpha` it is a change point, and both halves are searched again.
// Why this and not E-divisive means or a t-statistic: ranks make one outlier or bimodal noise
// (a GPU that sometimes boosts) count no more than any other point, and the permutation test
// makes no assumption about the noise distribution; the maximum over splits is taken inside
// each permutation, so searching many splits does not inflate false alarms. Each permutation is
// O(n), the whole search O(permutations · n · depth).

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::perf {

struct ChangePointOptions {
  double alpha = 0.01;
  int permutations = 499;
  int min_segment = 4;  // no change point leaves fewer values than this on a side
  std::uint64_t seed = 20261130;
  // Steps smaller than this (relative, between the medians of the two sides) are not reported,
  // even when significant: a 0.1% shift of a very quiet benchmark is not news.
  double min_change = 0.0;
};

struct ChangePoint {
  std::size_t index = 0;  // the first value of the new level
  double before = 0;      // median of the segment's values before the change point
  double after = 0;       // median after it (up to the next change point)
  double change = 0;      // (after - before) / |before|
  double p_value = 1;     // permutation p-value when it was found
};

// Change points of `values` (in time order), in increasing index.
std::vector<ChangePoint> find_change_points(std::span<const double> values,
                                            const ChangePointOptions& options = {});

}  // namespace kiln::perf
