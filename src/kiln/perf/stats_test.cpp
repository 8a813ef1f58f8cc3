// Distribution functions against closed forms and table values, the Mann-Whitney U test
// against exact enumeration and a hand-computed tie case, and the prediction interval.

#include "kiln/perf/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "kiln/perf/measurement.h"

namespace kiln::perf {
namespace {

TEST(Stats, NormalDistributionMatchesTableValues) {
  EXPECT_NEAR(normal_cdf(0), 0.5, 1e-12);
  EXPECT_NEAR(normal_cdf(1.959963984540054), 0.975, 1e-9);
  EXPECT_NEAR(normal_quantile(0.995), 2.5758293035489, 1e-7);
  EXPECT_NEAR(normal_quantile(0.5), 0, 1e-9);
}

TEST(Stats, StudentTMatchesClosedFormsAndTables) {
  // df = 1 is the Cauchy distribution; df = 3 has a closed form too.
  for (double t : {-3.0, -0.5, 0.0, 0.7, 2.0, 10.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / std::numbers::pi, 1e-10) << t;
    double s = t / std::sqrt(3.0);
    double closed = 0.5 + (s / (1 + t * t / 3) + std::atan(s)) / std::numbers::pi;
    EXPECT_NEAR(student_t_cdf(t, 3), closed, 1e-10) << t;
  }
  // Quantiles from any t table.
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.995, 5), 4.032143, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.95, 30), 1.697261, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706205, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.025, 10), -2.228139, 1e-5);
}

TEST(Stats, RobustSigmaIgnoresAnOutlier) {
  std::vector<double> values = {10, 11, 9, 10, 10.5, 9.5, 1000};
  EXPECT_DOUBLE_EQ(median(values), 10);
  // MAD of the deviations {0,1,1,0,0.5,0.5,990} is 0.5.
  EXPECT_NEAR(robust_sigma(values), 1.4826 * 0.5, 1e-12);
  EXPECT_GT(standard_deviation(values), 300);
  // Mostly equal values: the MAD is 0, the standard deviation takes over.
  std::vector<double> flat = {5, 5, 5, 5, 6};
  EXPECT_NEAR(robust_sigma(flat), standard_deviation(flat), 1e-12);
}

TEST(Stats, MannWhitneyExactSeparatedSamples) {
  std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
  auto test = mann_whitney_u(a, b);
  EXPECT_TRUE(test.exact);
  EXPECT_EQ(test.u, 0);
  // Two of the C(10,5) = 252 arrangements are this extreme.
  EXPECT_NEAR(test.p_value, 2.0 / 252.0, 1e-12);
  // Symmetric in its arguments.
  auto reverse = mann_whitney_u(b, a);
  EXPECT_EQ(reverse.u, 25);
  EXPECT_NEAR(reverse.p_value, test.p_value, 1e-12);
}

TEST(Stats, MannWhitneyExactMatchesEnumeration) {
  // Enumerating all C(11,5) = 462 splits: 24 are at least as extreme as U = 4.
  std::vector<double> a = {1.1, 2.5, 3, 4, 7}, b = {3.5, 5, 6, 8, 9, 12};
  auto test = mann_whitney_u(a, b);
  EXPECT_TRUE(test.exact);
  EXPECT_EQ(test.u, 4);
  EXPECT_NEAR(test.p_value, 24.0 / 462.0, 1e-12);
}

TEST(Stats, MannWhitneyWithTiesUsesTheCorrectedNormalApproximation) {
  // Hand computation: U = 7.5; tie groups {2,2} {3,3,3,3} {4,4,4} {5,5,5} {6,6} give a
  // variance of 8·8/12·(17 - 132/240) = 88; z = (|7.5 - 32| - 0.5) / sqrt(88) = 2.55841.
  std::vector<double> a = {1, 2, 2, 3, 3, 3, 4, 5}, b = {3, 4, 4, 5, 5, 6, 6, 7};
  auto test = mann_whitney_u(a, b);
  EXPECT_FALSE(test.exact);
  EXPECT_EQ(test.u, 7.5);
  EXPECT_NEAR(test.p_value, 0.0105152459, 1e-8);
}

TEST(Stats, MannWhitneyOfIdenticalSamplesIsNotSignificant) {
  std::vector<double> a = {3, 3, 3, 3}, b = {3, 3, 3, 3};
  EXPECT_EQ(mann_whitney_u(a, b).p_value, 1);
  EXPECT_EQ(mann_whitney_u(a, {}).p_value, 1);
}

TEST(Stats, MannWhitneyLargeSamplesAgreeWithExactWhereBothApply) {
  // 20 vs 20 without ties is exact; the normal approximation of the same data must be close.
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) {
    a.push_back(i * 1.0);
    b.push_back(i * 1.0 + 6.5);
  }
  auto exact = mann_whitney_u(a, b);
  ASSERT_TRUE(exact.exact);
  a.push_back(100);  // 21 values: approximation
  b.push_back(100.5);
  auto approx = mann_whitney_u(a, b);
  ASSERT_FALSE(approx.exact);
  EXPECT_LT(exact.p_value, 0.01);
  EXPECT_LT(approx.p_value, 0.05);
}

TEST(Stats, FarOutliersAreLeftOutOfTheSummary) {
  std::vector<double> run = {100, 101, 99, 100.5, 99.5, 100, 100.2, 99.8, 250, 100.1};
  auto kept = without_far_outliers(run);
  EXPECT_EQ(kept.size(), 9u);
  EXPECT_NEAR(summary_of(run), 100.0111, 1e-3);
  // Normal-looking data lose nothing; fewer than 10 values are never judged.
  std::vector<double> plain = {100, 101, 99, 100.5, 99.5, 100, 100.2, 99.8, 102, 98};
  EXPECT_EQ(without_far_outliers(plain).size(), 10u);
  std::vector<double> few = {1, 1, 1, 50};
  EXPECT_EQ(without_far_outliers(few).size(), 4u);
}

TEST(Stats, HodgesLehmannShiftIsTheMedianPairwiseDifference) {
  std::vector<double> a = {1, 2, 3}, b = {11, 12, 14};
  // Differences: 10 9 8 / 11 10 9 / 13 12 11 → median 10.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(a, b), 10);
  // Bimodal samples: the median of each side jumps between the modes, the shift does not.
  std::vector<double> base = {100, 100, 100, 106, 106, 106, 100, 100, 100, 106};  // median 100
  std::vector<double> cur = {105, 105, 105, 111, 111, 111, 111, 105, 105, 111};   // median 108
  EXPECT_DOUBLE_EQ(median(cur) - median(base), 8);
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(base, cur), 5);
}

TEST(Stats, PredictionPValueIsTheTailOfTheTDistribution) {
  PredictionInterval interval{.center = 100, .lower = 0, .upper = 0, .sigma = 1, .n = 8, .df = 7};
  double half = student_t_quantile(0.995, 7) * std::sqrt(1 + 1.0 / 8);
  EXPECT_GT(prediction_p_value(interval, 100.3), 0.5);
  EXPECT_LT(prediction_p_value(interval, 110), 0.001);
  EXPECT_NEAR(prediction_p_value(interval, 100 + half), 0.01, 1e-6);
  interval.df = 0;
  EXPECT_EQ(prediction_p_value(interval, 200), 1);
}

}  // namespace
}  // namespace kiln::perf
