// The decision rule on constructed cases: each verdict, each method, the direction, the
// threshold.

#include "kiln/perf/compare.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln::perf {
namespace {

// n values spread evenly over ±spread·center (a deterministic "noise").
std::vector<double> around(double center, double spread, int n, double phase = 0) {
  std::vector<double> values;
  for (int i = 0; i < n; ++i) {
    double u =
        n == 1 ? 0 : (static_cast<double>((i * 7 + static_cast<int>(phase)) % n) / (n - 1)) * 2 - 1;
    values.push_back(center * (1 + spread * u));
  }
  return values;
}

TEST(Compare, RankTestFlagsATwentyPercentSlowdown) {
  Baseline base{
      .samples = around(100, 0.01, 10), .history = {}, .value = {}, .history_samples = {}};
  auto current = around(120, 0.01, 10);
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "mann-whitney");
  EXPECT_EQ(c.verdict, Verdict::regression);
  EXPECT_NEAR(c.change, 0.2, 1e-9);
  ASSERT_TRUE(c.p_value);
  EXPECT_LT(*c.p_value, 0.001);
}

TEST(Compare, DirectionDecidesRegressionOrImprovement) {
  Baseline base{
      .samples = around(100, 0.01, 10), .history = {}, .value = {}, .history_samples = {}};
  auto faster = around(80, 0.01, 10);
  EXPECT_EQ(compare(base, faster, 0, Direction::smaller_is_better, {}).verdict,
            Verdict::improvement);
  // For a throughput, lower is worse.
  EXPECT_EQ(compare(base, faster, 0, Direction::bigger_is_better, {}).verdict, Verdict::regression);
}

TEST(Compare, SignificantButBelowThresholdIsUnchanged) {
  Baseline base{
      .samples = around(100, 0.001, 10), .history = {}, .value = {}, .history_samples = {}};
  auto current = around(102, 0.001, 10);  // clearly different, only 2%
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_LT(*c.p_value, 0.01);
  EXPECT_EQ(c.verdict, Verdict::unchanged);
  // With a 1% threshold it is a regression.
  DecisionOptions strict;
  strict.threshold = 0.01;
  EXPECT_EQ(compare(base, current, 0, Direction::smaller_is_better, strict).verdict,
            Verdict::regression);
}

TEST(Compare, ChangeBelowThresholdIsNeverARegression) {
  // 4.5% slower with ±2% noise: significant, and a 5% slowdown cannot be ruled out, but the
  // change shown is 4.5%: the verdict is that change, below the threshold.
  Baseline base{
      .samples = around(100, 0.02, 10), .history = {}, .value = {}, .history_samples = {}};
  auto c = compare(base, around(104.5, 0.02, 10), 0, Direction::smaller_is_better, {});
  EXPECT_LT(*c.p_value, 0.001);
  EXPECT_GT(c.change + c.detectable, 0.05);
  EXPECT_LT(c.change, 0.05);
  EXPECT_EQ(c.verdict, Verdict::unchanged);
  EXPECT_EQ(c.reason, "significant but below the threshold 5.0%");
  // 5.5% with the same noise is a regression.
  auto over = compare(base, around(105.5, 0.02, 10), 0, Direction::smaller_is_better, {});
  EXPECT_GE(over.change, 0.05);
  EXPECT_EQ(over.verdict, Verdict::regression);
  EXPECT_EQ(over.reason, "significant and ≥ threshold 5.0%");
}

TEST(Compare, NoisyBenchmarkIsReportedNotPassed) {
  // ±30% noise, 6% apart: nothing significant, and a 5% change could not have been seen.
  Baseline base{.samples = around(100, 0.3, 6), .history = {}, .value = {}, .history_samples = {}};
  auto current = around(106, 0.3, 6, 3);
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_GE(*c.p_value, 0.01);
  EXPECT_GT(c.detectable, 0.05);
  EXPECT_EQ(c.verdict, Verdict::too_noisy);
  EXPECT_EQ(c.reason,
            fmt::format("too noisy: the interval ±{:.1f}% is wider than the threshold 5.0%",
                        c.detectable * 100));
}

TEST(Compare, QuietUnchangedBenchmarkIsUnchanged) {
  Baseline base{
      .samples = around(100, 0.005, 10), .history = {}, .value = {}, .history_samples = {}};
  auto current = around(100.1, 0.005, 10, 3);
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_LT(c.detectable, 0.05);
  EXPECT_EQ(c.verdict, Verdict::unchanged);
}

TEST(Compare, PredictionIntervalWithoutRepetitions) {
  Baseline base{.samples = {},
                .history = {100, 101, 99, 100.5, 99.5, 100, 100.3, 99.7},
                .value = {},
                .history_samples = {}};
  auto c = compare(base, {}, 112, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "prediction-interval");
  ASSERT_TRUE(c.interval);
  EXPECT_EQ(c.verdict, Verdict::regression);
  EXPECT_EQ(compare(base, {}, 100.8, Direction::smaller_is_better, {}).verdict, Verdict::unchanged);
  // A history as wide as ±20%: a 4% change cannot be judged.
  Baseline wide{.samples = {},
                .history = {100, 120, 80, 110, 90, 105, 95, 115},
                .value = {},
                .history_samples = {}};
  EXPECT_EQ(compare(wide, {}, 104, Direction::smaller_is_better, {}).verdict, Verdict::too_noisy);
}

TEST(Compare, RepetitionsWithinRunNoisyHistoryIsNotARegression) {
  // Each run is tight, but runs wander by ±8%: a 6% shift of one run is run-to-run noise.
  Baseline base{.samples = around(100, 0.002, 10),
                .history = {100, 108, 93, 104, 96, 107, 92, 100},
                .value = {},
                .history_samples = {}};
  auto current = around(106, 0.002, 10);
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_LT(*c.p_value, 0.01);  // the rank test alone would flag it
  EXPECT_NE(c.verdict, Verdict::regression);
  EXPECT_EQ(c.verdict, Verdict::too_noisy);
}

TEST(Compare, PreemptedRepetitionsDoNotHideASlowdown) {
  // Three of ten baseline repetitions were preempted (2.5-3x): the rank test without them
  // still sees the 20% slowdown.
  auto base_samples = around(100, 0.01, 10);
  base_samples[2] *= 3;
  base_samples[5] *= 2.5;
  base_samples[8] *= 2.8;
  Baseline base{.samples = base_samples, .history = {}, .value = {}, .history_samples = {}};
  auto current = around(120, 0.01, 10, 3);
  current[4] *= 2;
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.verdict, Verdict::regression);
  EXPECT_NEAR(c.change, 0.20, 0.01);
}

TEST(Compare, LargeChangeThatIsNotSignificantIsTooNoisy) {
  // Five each, no history: the exact test needs complete separation for p < 0.01.
  Baseline base{
      .samples = {100, 120, 90, 110, 95}, .history = {}, .value = {}, .history_samples = {}};
  auto c = compare(base, std::vector<double>{112, 125, 100, 118, 108}, 0,
                   Direction::smaller_is_better, {});
  EXPECT_GE(*c.p_value, 0.01);
  EXPECT_GE(c.change, 0.05);
  EXPECT_EQ(c.verdict, Verdict::too_noisy);
}

TEST(Compare, AnOutlyingValueOfTheHistoryDoesNotHideARegression) {
  // One run at 260 among values around 100: left out of the baseline on the history's own
  // spread, it neither widens the interval nor makes a real slowdown too noisy.
  std::vector<double> history = {100,   101,  99,    100.5, 99.5, 100,
                                 100.2, 99.8, 100.1, 99.9,  260,  100.3};
  Baseline base{.samples = {}, .history = history, .value = {}, .history_samples = {}};
  auto slow = compare(base, {}, 110, Direction::smaller_is_better, {});
  EXPECT_EQ(slow.verdict, Verdict::regression);
  ASSERT_TRUE(slow.interval);
  EXPECT_EQ(slow.interval->outliers, 1);
  EXPECT_LT(slow.interval->upper, 103);
  EXPECT_EQ(compare(base, {}, 250, Direction::smaller_is_better, {}).verdict, Verdict::regression);
  EXPECT_EQ(compare(base, {}, 100.4, Direction::smaller_is_better, {}).verdict, Verdict::unchanged);
  // Out of the interval but inside the outlier fence (±1.85 here): judged as usual.
  DecisionOptions one_percent;
  one_percent.threshold = 0.01;
  auto c = compare(base, {}, 101.9, Direction::smaller_is_better, one_percent);
  ASSERT_TRUE(c.interval);
  EXPECT_GT(101.9, c.interval->upper);
  EXPECT_EQ(c.verdict, Verdict::regression);
}

// A history of `runs` runs of `reps` repetitions, each from `make(run)`, as the gate builds it.
template <typename Make>
Baseline run_history(int runs, Make make) {
  Baseline base;
  for (int r = 0; r < runs; ++r) {
    auto samples = make(r);
    base.history.push_back(summary_of(samples));
    base.history_samples.push_back(samples);
    base.samples = samples;
  }
  return base;
}

// A run's own offset from the level, in percent: ±0.3%, deterministic.
double wobble(int run) { return 0.3 * ((run * 5) % 7 - 3) / 3.0; }

// Ten repetitions from two modes: the fast one around `center`, `slow` of them 6% higher
// (a second clock state), each mode ±1%.
std::vector<double> bimodal(double center, int slow, int phase) {
  std::vector<double> values = around(center, 0.01, 10, phase);
  for (int i = 0; i < slow; ++i) values[static_cast<std::size_t>(i)] *= 1.06;
  return values;
}

TEST(Compare, RunHistoryCatchesASixPercentStepUnderBimodalNoise) {
  // Every run has 2 to 4 of its 10 repetitions in the slow mode. Against the previous run
  // alone the rank test has little power here; against the run history the step is clear.
  auto base = run_history(20, [](int r) { return bimodal(100, 2 + r % 3, r); });
  auto current = bimodal(106, 3, 5);
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "run-history");
  EXPECT_EQ(c.verdict, Verdict::regression);
  EXPECT_NEAR(c.change, 0.06, 0.01);
  ASSERT_TRUE(c.p_value);
  EXPECT_LT(*c.p_value, 0.01);
  // The same run at the old level, with as many slow repetitions as the history ever had,
  // is unchanged.
  auto same = compare(base, bimodal(100, 4, 5), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(same.verdict, Verdict::unchanged);
}

TEST(Compare, RunHistorySeesRunToRunNoiseThatRepetitionsHide) {
  // Each run is tight (±0.2%) but the runs wander by ±8%: a run 6% slower is within that.
  const double offsets[] = {0, 8, -7, 4, -4, 7, -8, 0, 3, -3};
  auto base = run_history(10, [&](int r) { return around(100 + offsets[r], 0.002, 10, r); });
  auto c = compare(base, around(106, 0.002, 10), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "run-history");
  EXPECT_NE(c.verdict, Verdict::regression);
  EXPECT_EQ(c.verdict, Verdict::too_noisy);
  // A step far beyond the wander is still found.
  EXPECT_EQ(compare(base, around(140, 0.002, 10), 0, Direction::smaller_is_better, {}).verdict,
            Verdict::regression);
}

TEST(Compare, RunHistoryLeavesOutAStrayRepetitionEvenInARunOfFive) {
  // Runs of five: too few for a run's own MAD, but the history's pooled within-run spread
  // says a repetition 2.5x slower is a far outlier.
  auto base = run_history(20, [](int r) { return around(100, 0.01, 5, r); });
  auto current = around(100, 0.01, 5, 2);
  current[1] *= 2.5;
  auto c = compare(base, current, 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "run-history");
  EXPECT_EQ(c.verdict, Verdict::unchanged);
  EXPECT_NEAR(c.current, 100, 1);
}

TEST(Compare, RunHistoryAThrottledRunOfTheHistoryDoesNotHideARegression) {
  // Nineteen steady runs and one throttled at 130 (issue 18: a +10% regression after one +30%
  // run was too-noisy every time). The throttled run is left out of the baseline.
  auto base = run_history(
      20, [](int r) { return around(r == 7 ? 130 : 100 * (1 + wobble(r) / 100), 0.01, 10, r); });
  auto c = compare(base, around(110, 0.01, 10), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.verdict, Verdict::regression);
  ASSERT_TRUE(c.interval);
  EXPECT_EQ(c.interval->outliers, 1);
  EXPECT_LT(c.detectable, 0.02);
  EXPECT_EQ(compare(base, around(125, 0.01, 10), 0, Direction::smaller_is_better, {}).verdict,
            Verdict::regression);
  EXPECT_EQ(compare(base, around(100, 0.01, 10, 4), 0, Direction::smaller_is_better, {}).verdict,
            Verdict::unchanged);
  // As far out as the throttled run: it may be another one. Farther, it is not.
  EXPECT_EQ(compare(base, around(140, 0.01, 10), 0, Direction::smaller_is_better, {}).verdict,
            Verdict::regression);
  auto like = compare(base, around(130.5, 0.01, 10), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(like.verdict, Verdict::too_noisy);
  EXPECT_EQ(like.reason.rfind("too noisy: as far out as an outlying run of the history (+", 0), 0u)
      << like.reason;
}

TEST(Compare, RunHistoryRunsAtANewLevelTooFewForAChangePointAreNotFlaggedAgain) {
  // Twenty runs at 100, then two at 110 (a step merged two runs ago: too few runs for the change
  // point). A third run at 110 is as far out as they are: too noisy, not a second failure;
  // once four runs hold the new level, the baseline starts there (above).
  auto base = run_history(
      22, [](int r) { return around((r < 20 ? 100 : 110) * (1 + wobble(r) / 100), 0.01, 10, r); });
  auto c = compare(base, around(110, 0.01, 10, 3), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.verdict, Verdict::too_noisy);
  ASSERT_TRUE(c.interval);
  EXPECT_EQ(c.interval->outliers, 2);
}

TEST(Compare, RunHistoryBaselineStartsAfterTheLastChangePoint) {
  // Fifteen runs at 100, then ten at 110 (a regression the history has accepted). The next
  // run at 110 is unchanged, and a second step of 6% soon after is a regression against 110,
  // not too noisy against a history holding both levels (issue 18: missed 98 times of 100).
  auto base = run_history(
      25, [](int r) { return around((r < 15 ? 100 : 110) * (1 + wobble(r) / 100), 0.01, 10, r); });
  auto same = compare(base, around(110, 0.01, 10, 3), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(same.verdict, Verdict::unchanged);
  EXPECT_EQ(same.baseline_start, 15u);
  EXPECT_NEAR(same.baseline, 110, 0.5);
  auto second = compare(base, around(116.6, 0.01, 10, 3), 0, Direction::smaller_is_better, {});
  EXPECT_EQ(second.verdict, Verdict::regression);
  EXPECT_NEAR(second.change, 0.06, 0.005);
}

TEST(Compare, RunHistoryIntervalLeansTowardsTheSlowModeOfFewRepetitions) {
  // Runs of 5 with 0 to 2 repetitions in a mode 4% slower: the level of such a run has a long
  // slow tail, and the interval is wider on that side than on the other.
  auto base = run_history(20, [](int r) {
    auto values = around(100, 0.01, 5, r);
    for (int i = 0; i < r % 3; ++i) values[static_cast<std::size_t>(i)] *= 1.04;
    return values;
  });
  auto c = compare(base, around(100, 0.01, 5), 0, Direction::smaller_is_better, {});
  ASSERT_EQ(c.method, "run-history");
  ASSERT_TRUE(c.interval);
  EXPECT_GT(c.interval->upper - c.interval->center, 1.1 * (c.interval->center - c.interval->lower));
  // Symmetric noise: a symmetric interval.
  auto even = run_history(20, [](int r) { return around(100 + (r % 5) - 2, 0.01, 5, r); });
  auto e = compare(even, around(100, 0.01, 5), 0, Direction::smaller_is_better, {});
  ASSERT_TRUE(e.interval);
  EXPECT_NEAR(e.interval->upper - e.interval->center, e.interval->center - e.interval->lower,
              0.01 * (e.interval->upper - e.interval->center));
}

TEST(Compare, RunHistoryDoesNotFenceOffMostOfAWildRun) {
  // The history's runs agree within 0.2%; the current run is spread over ±30%. Its values are
  // not "far outliers" of a tight run: the fence leaves them all in, and the verdict is about
  // all of them (not a mean of the one or two values near its median).
  auto base = run_history(20, [](int r) { return around(100, 0.002, 10, r); });
  auto wild = around(100, 0.3, 10, 3);
  auto c = compare(base, wild, 0, Direction::smaller_is_better, {});
  EXPECT_EQ(c.method, "run-history");
  EXPECT_NEAR(c.current, 100, 1e-9);
  EXPECT_NE(c.verdict, Verdict::regression);
  EXPECT_NE(c.verdict, Verdict::improvement);
}

TEST(Compare, RunHistoryNeedsRepetitionsOnBothSides) {
  auto base = run_history(20, [](int r) { return around(100, 0.01, 10, r); });
  // The current result has no repetitions: the prediction interval of the summaries.
  EXPECT_EQ(compare(base, {}, 112, Direction::smaller_is_better, {}).method, "prediction-interval");
  // Too few runs of the history have repetitions: the older rule.
  Baseline few = base;
  for (std::size_t i = 0; i + 3 < few.history_samples.size(); ++i) few.history_samples[i].clear();
  EXPECT_EQ(compare(few, around(112, 0.01, 10), 0, Direction::smaller_is_better, {}).method,
            "mann-whitney");
}

TEST(Compare, TooLittleToCompareIsNoBaseline) {
  auto c = compare(Baseline{}, {}, 5, Direction::smaller_is_better, {});
  EXPECT_EQ(c.verdict, Verdict::no_baseline);
  EXPECT_EQ(c.reason, "no baseline: no earlier result of this benchmark");
  Baseline one{.samples = {}, .history = {100}, .value = 100, .history_samples = {}};
  c = compare(one, {}, 150, Direction::smaller_is_better, {});
  EXPECT_EQ(c.verdict, Verdict::no_baseline);
  EXPECT_EQ(c.reason, "no baseline: 1 earlier result(s) without repetitions, 5 needed");
  EXPECT_NEAR(c.change, 0.5, 1e-12);
}

}  // namespace
}  // namespace kiln::perf
