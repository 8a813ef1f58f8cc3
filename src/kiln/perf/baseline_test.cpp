// The baseline of a history of run levels: the plain prediction interval of a steady history,
// outlying runs left out on the history's own spread, and the baseline after a change point.

#include "kiln/perf/baseline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace kiln::perf {
namespace {

// `n` levels around `center`, a deterministic ±`spread` pattern.
std::vector<double> steady(double center, double spread, int n, int phase = 0) {
  std::vector<double> values;
  for (int i = 0; i < n; ++i) values.push_back(center + spread * (((i + phase) * 7) % 9 - 4) / 4.0);
  return values;
}

TEST(Baseline, SteadyHistoryIsTheTextbookPredictionInterval) {
  std::vector<double> history = {100, 101, 99, 100.5, 99.5, 100, 100.2, 99.8};
  auto interval = baseline_interval(history, 0.99);
  EXPECT_EQ(interval.n, 8);
  EXPECT_EQ(interval.df, 7);
  EXPECT_EQ(interval.start, 0u);
  EXPECT_EQ(interval.outliers, 0);
  EXPECT_DOUBLE_EQ(interval.center, 100);
  EXPECT_NEAR(interval.sigma, standard_deviation(history), 1e-12);
  double half = student_t_quantile(0.995, 7) * interval.sigma * std::sqrt(1 + 1.0 / 8);
  EXPECT_NEAR(interval.upper - interval.center, half, 1e-9);
  EXPECT_NEAR(interval.center - interval.lower, half, 1e-9);
  EXPECT_NEAR(prediction_p_value(interval, interval.upper), 0.01, 1e-6);
}

TEST(Baseline, OneOutlyingRunDoesNotWidenTheInterval) {
  auto history = steady(100, 0.5, 20);
  auto quiet = baseline_interval(history, 0.99);
  history[7] = 130;  // a run on a throttled GPU
  auto interval = baseline_interval(history, 0.99);
  EXPECT_EQ(interval.outliers, 1);
  EXPECT_GT(interval.fence, 0);
  EXPECT_LT(interval.fence, 5);
  EXPECT_EQ(interval.n, 19);
  EXPECT_LT(interval.upper, 102);
  EXPECT_NEAR(interval.upper - interval.lower, quiet.upper - quiet.lower,
              0.1 * (quiet.upper - quiet.lower));
  // Without rejection the run would have made the interval wider than +-15%.
  EXPECT_GT(standard_deviation(history), 6);
}

TEST(Baseline, FewerThanTenLevelsAreNotJudgedForOutliers) {
  std::vector<double> history = {100, 101, 99, 100, 130};
  auto interval = baseline_interval(history, 0.99);
  EXPECT_EQ(interval.outliers, 0);
  EXPECT_EQ(interval.fence, 0);
  EXPECT_EQ(interval.n, 5);
}

TEST(Baseline, StartsAfterTheLastChangePoint) {
  // Fifteen runs at 100, then ten at 110 (an accepted regression): the baseline is the ten,
  // and the spread is that of the runs about their own level, not of the two levels.
  std::mt19937_64 random(18);
  std::normal_distribution<double> noise(0, 0.3);
  std::vector<double> history;
  for (int i = 0; i < 25; ++i) history.push_back((i < 15 ? 100 : 110) + noise(random));
  auto interval = baseline_interval(history, 0.99);
  EXPECT_EQ(interval.start, 15u);
  EXPECT_EQ(interval.n, 10);
  EXPECT_EQ(interval.df, 23);
  EXPECT_NEAR(interval.center, 110, 0.3);
  EXPECT_LT(interval.upper - interval.center, 1.5);
  // A second 5% step soon after stands out against it.
  EXPECT_GT(115.5, interval.upper);
  EXPECT_LT(prediction_p_value(interval, 115.5), 1e-4);
}

}  // namespace
}  // namespace kiln::perf
