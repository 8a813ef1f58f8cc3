// Change points on constructed series: a clean step, two steps, none, outliers, a drift.

#include "kiln/perf/change_points.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace kiln::perf {
namespace {

std::vector<double> noisy(std::vector<std::pair<int, double>> levels, double cv, unsigned seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0, cv);
  std::vector<double> values;
  for (auto [count, level] : levels)
    for (int i = 0; i < count; ++i) values.push_back(level * (1 + noise(random)));
  return values;
}

TEST(ChangePoints, FindsOneStepAtItsIndex) {
  auto values = noisy({{30, 100}, {30, 110}}, 0.01, 1);
  auto points = find_change_points(values);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 30u);
  EXPECT_NEAR(points[0].change, 0.10, 0.02);
  EXPECT_LT(points[0].p_value, 0.01);
}

TEST(ChangePoints, FindsTwoSteps) {
  auto values = noisy({{25, 100}, {25, 120}, {25, 105}}, 0.01, 2);
  auto points = find_change_points(values);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].index, 25u);
  EXPECT_EQ(points[1].index, 50u);
  EXPECT_GT(points[0].change, 0.15);
  EXPECT_LT(points[1].change, -0.10);
}

TEST(ChangePoints, StationaryNoiseHasNoneAcrossSeeds) {
  int false_alarms = 0;
  for (unsigned seed = 0; seed < 40; ++seed) {
    auto values = noisy({{60, 100}}, 0.05, 100 + seed);
    false_alarms += static_cast<int>(find_change_points(values).size());
  }
  // alpha = 0.01 per test: a couple in 40 series would already be unlucky.
  EXPECT_LE(false_alarms, 2);
}

TEST(ChangePoints, OutliersDoNotMakeChangePoints) {
  auto values = noisy({{50, 100}}, 0.01, 7);
  values[10] = 400;
  values[11] = 350;
  values[30] = 20;
  EXPECT_TRUE(find_change_points(values).empty());
}

TEST(ChangePoints, ShortSeriesAndMinChange) {
  EXPECT_TRUE(find_change_points(std::vector<double>{1, 2, 3}).empty());
  auto values = noisy({{30, 100}, {30, 101}}, 0.001, 3);
  ChangePointOptions options;
  EXPECT_EQ(find_change_points(values, options).size(), 1u);
  options.min_change = 0.05;
  EXPECT_TRUE(find_change_points(values, options).empty());
}

TEST(ChangePoints, SameSeedSameAnswer) {
  auto values = noisy({{20, 100}, {20, 103}}, 0.02, 9);
  auto a = find_change_points(values);
  auto b = find_change_points(values);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
  }
}

}  // namespace
}  // namespace kiln::perf
