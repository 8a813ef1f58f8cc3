// The bisection over a fake measurement: which commits it runs, the one it names, the repeats
// near the middle, the threshold, errors.

#include "kiln/perf/bisect.h"

#include <gtest/gtest.h>

#include <map>

namespace kiln::perf {
namespace {

// n commits; from `culprit` on the level is `slow`, before it 100. Each measurement of commit i
// returns the next of noise[i] (or the level itself).
struct Fake {
  std::vector<BisectCommit> commits;
  std::map<std::string, std::vector<double>> noise;
  std::vector<std::string> measured;
  Fake(int n, int culprit, double slow) {
    for (int i = 0; i < n; ++i) commits.push_back({.sha = "c" + std::to_string(i)});
    culprit_ = culprit;
    slow_ = slow;
  }
  MeasureCommit measure() {
    return [this](BisectCommit& c) -> Status {
      measured.push_back(c.sha);
      const int i = std::stoi(c.sha.substr(1));
      double level = i >= culprit_ ? slow_ : 100;
      auto& extra = noise[c.sha];
      if (!extra.empty()) {
        level = extra.front();
        extra.erase(extra.begin());
      }
      c.levels.push_back(level);
      c.runs.push_back(static_cast<std::int64_t>(measured.size()));
      return {};
    };
  }
  int culprit_ = 0;
  double slow_ = 0;
};

TEST(Bisect, NamesTheFirstSlowCommitInLogarithmicRuns) {
  for (int culprit = 1; culprit < 33; ++culprit) {
    Fake fake(33, culprit, 120);
    auto outcome = bisect(fake.commits, {}, fake.measure());
    ASSERT_TRUE(outcome) << outcome.error().message;
    ASSERT_TRUE(outcome->found);
    EXPECT_EQ(outcome->first_bad, static_cast<std::size_t>(culprit)) << culprit;
    EXPECT_EQ(outcome->last_good, static_cast<std::size_t>(culprit - 1));
    EXPECT_NEAR(outcome->change, 0.2, 1e-12);
    EXPECT_NEAR(outcome->step, 0.2, 1e-12);
    // GOOD, BAD and log2(32) = 5 midpoints, each clearly on one side: run once.
    EXPECT_EQ(outcome->runs, 7) << culprit;
    EXPECT_EQ(fake.measured.front(), "c0");
    EXPECT_EQ(fake.measured[1], "c32");
  }
}

TEST(Bisect, AFasterCommitIsFoundToo) {
  Fake fake(9, 5, 80);
  auto outcome = bisect(fake.commits, {}, fake.measure());
  ASSERT_TRUE(outcome && outcome->found);
  EXPECT_EQ(outcome->first_bad, 5u);
  EXPECT_NEAR(outcome->change, -0.2, 1e-12);
}

TEST(Bisect, AStepBelowTheThresholdIsNothingToBisect) {
  Fake fake(9, 5, 104);
  auto outcome = bisect(fake.commits, {.repeat = 3, .threshold = 0.05}, fake.measure());
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->found);
  EXPECT_NEAR(outcome->step, 0.04, 1e-12);
  EXPECT_EQ(fake.measured, (std::vector<std::string>{"c0", "c8"}));
  auto json = bisect_json(fake.commits, *outcome, "attention", "time");
  EXPECT_EQ(json["found"], false);
  EXPECT_TRUE(json["first_bad"].is_null());
  EXPECT_EQ(json["measured"].size(), 2u);
}

TEST(Bisect, ALevelNearTheMiddleIsMeasuredAgainUpToRepeat) {
  // c2 (the first midpoint of 0..4) reads 111 (near the middle 110) twice, then 100.
  Fake fake(5, 3, 120);
  fake.noise["c2"] = {111, 109, 100};
  auto outcome = bisect(fake.commits, {.repeat = 3, .threshold = 0.05}, fake.measure());
  ASSERT_TRUE(outcome && outcome->found);
  EXPECT_EQ(fake.commits[2].levels.size(), 3u);
  EXPECT_EQ(outcome->first_bad, 3u);  // the mean 106.7 is nearer the good level
  Fake once(5, 3, 120);
  once.noise["c2"] = {111, 109, 100};
  ASSERT_TRUE(bisect(once.commits, {.repeat = 1, .threshold = 0.05}, once.measure()));
  EXPECT_EQ(once.commits[2].levels.size(), 1u);
}

TEST(Bisect, AFailedMeasurementEndsIt) {
  Fake fake(5, 3, 120);
  auto outcome = bisect(fake.commits, {},
                        [](BisectCommit&) -> Status { return fail(ErrorCode::io_error, "no"); });
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().message, "no");
  std::vector<BisectCommit> one = {{.sha = "a"}};
  EXPECT_FALSE(bisect(one, {}, fake.measure()));
}

TEST(Bisect, JsonNamesTheCulpritAndEveryRun) {
  Fake fake(7, 3, 120);
  fake.commits[3].subject = "change 4";
  auto outcome = bisect(fake.commits, {}, fake.measure());
  ASSERT_TRUE(outcome);
  auto json = bisect_json(fake.commits, *outcome, "attention", "time");
  EXPECT_EQ(json["first_bad"], "c3");
  EXPECT_EQ(json["subject"], "change 4");
  EXPECT_EQ(json["last_good"], "c2");
  EXPECT_NEAR(json["change_percent"].get<double>(), 20, 1e-9);
  EXPECT_EQ(json["commits"], 6);
  EXPECT_EQ(json["job_runs"], outcome->runs);
  std::size_t runs = 0;
  for (const auto& m : json["measured"]) runs += m["runs"].size();
  EXPECT_EQ(runs, static_cast<std::size_t>(outcome->runs));
}

}  // namespace
}  // namespace kiln::perf
