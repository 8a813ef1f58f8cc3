#pragma once
// The statistics the gate needs, written out so that their assumptions are visible:
// distribution functions, the Mann-Whitney U rank test, robust location and spread, and a
// prediction interval for the next value of a series. Every function is pure.

#include <span>
#include <vector>

namespace kiln::perf {

// Standard normal distribution.
double normal_cdf(double z);
double normal_quantile(double p);  // p in (0, 1)

// Student's t distribution with `df` > 0 degrees of freedom (through the regularized
// incomplete beta function).
double student_t_cdf(double t, double df);
double student_t_quantile(double p, double df);  // p in (0, 1)

// Robust summaries: the median, the median absolute deviation scaled by 1.4826 (so that it
// estimates the standard deviation of normal data while ignoring a minority of outliers), and
// the sample standard deviation.
double median(std::span<const double> values);
double robust_sigma(std::span<const double> values);
double standard_deviation(std::span<const double> values);

// The two-sided Mann-Whitney U test: are values of `a` and `b` equally likely to be the larger?
// No assumption about the shape of the distributions, so bimodal noise and outliers do not
// break it. Exact (the permutation distribution of U, by counting) when there are no ties and
// both sides have at most 20 values; otherwise the normal approximation with the tie
// correction of the variance and a continuity correction.
struct RankTest {
  double u = 0;        // U of `a`: pairs (x in a, y in b) with x > y, ties counting one half
  double p_value = 1;  // two-sided
  bool exact = false;
};
RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b);

// `values` without the far outliers: those more than `k` robust_sigma from the median (a
// repetition preempted by another process, a page-fault storm). With k = 5 nothing is dropped
// from normal data of any realistic size; fewer than half the values can ever be dropped.
// Below 10 values nothing is dropped: the MAD of a handful of values is too unsteady to judge
// by.
std::vector<double> without_far_outliers(std::span<const double> values, double k = 5);

// The Hodges-Lehmann estimate of the shift from `a` to `b`: the median of every difference
// b_j - a_i. The estimator that goes with the rank test: as robust as a median, and stable
// when the data are bimodal, where the difference of two medians jumps between the modes.
// Above a million pairs it falls back to the difference of the medians.
double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b);

// A two-sided prediction interval for one new observation of a process (baseline.h computes
// it for a history of run levels): center ± t(1 - (1-confidence)/2, df) · sigma · sqrt(1 + 1/n).
struct PredictionInterval {
  double center = 0;
  double lower = 0;
  double upper = 0;
  double sigma = 0;
  int n = 0;         // the values the center is the mean of
  int df = 0;        // degrees of freedom of sigma
  int outliers = 0;  // values left out as outlying
  double fence = 0;  // how far from its center a value had to be to be left out; 0: none judged
  // The values left out, as signed distances from their center: a new value as far out as one
  // of them (within the fence) may be another such one.
  std::vector<double> outlying{};
  std::size_t start = 0;  // the index of the first value of the baseline (after a change point)
};

// The two-sided p-value of `value` under the model of the interval: how often the same process
// would produce a value at least this far from the center.
double prediction_p_value(const PredictionInterval& interval, double value);

}  // namespace kiln::perf
