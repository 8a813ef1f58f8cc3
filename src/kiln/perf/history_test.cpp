// benchmark_history: series split by metric/branch/testbed, cut to the newest points, values in
// the newest point's unit, and the change point of a step found and put into the JSON.

#include "kiln/perf/history.h"

#include <gtest/gtest.h>

namespace kiln::perf {
namespace {

store::BenchmarkResult result(std::int64_t id, double value, const std::string& branch = "main",
                              const std::string& unit = "ns") {
  store::BenchmarkResult r;
  r.id = id;
  r.repository = "acme/kernels";
  r.benchmark = "attention";
  r.metric = "real_time";
  r.unit = unit;
  r.direction = "smaller_is_better";
  r.branch = branch;
  r.testbed = "gpus=NVIDIA H100 x1";
  r.commit_sha = "c" + std::to_string(id);
  r.time = 1000 * id;
  r.value = value;
  r.source = "bench.json";
  r.format = "google-benchmark";
  return r;
}

// 12 points near 2 ms, then 12 near 2.4 ms (+20%), a little noise.
std::vector<store::BenchmarkResult> stepped() {
  std::vector<store::BenchmarkResult> out;
  for (int i = 0; i < 24; ++i) {
    const double level = i < 12 ? 2.0e6 : 2.4e6;
    out.push_back(result(i + 1, level + (i % 3) * 1.0e4));
  }
  return out;
}

TEST(BenchmarkHistory, FindsTheStepAndNamesItsCommit) {
  const auto records = stepped();
  auto history = benchmark_history(records, 0);
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 1u);
  const auto& series = (*history)[0];
  EXPECT_EQ(series.points.size(), 24u);
  ASSERT_EQ(series.change_points.size(), 1u);
  EXPECT_EQ(series.change_points[0].index, 12u);
  const auto json = to_json(series);
  EXPECT_EQ(json["change_points"][0]["commit"], "c13");
  EXPECT_NEAR(json["change_points"][0]["change_percent"].get<double>(), 20.0, 1.0);
  EXPECT_EQ(json["points"][0]["value_text"], "2 ms");
  EXPECT_EQ(json["change_points"][0]["after_text"], "2.41 ms");
  EXPECT_EQ(json["unit"], "ns");
}

TEST(BenchmarkHistory, AFlatSeriesHasNoChangePoint) {
  std::vector<store::BenchmarkResult> records;
  for (int i = 0; i < 20; ++i) records.push_back(result(i + 1, 2.0e6 + (i % 4) * 1.0e4));
  auto history = benchmark_history(records, 0);
  ASSERT_TRUE(history);
  EXPECT_TRUE((*history)[0].change_points.empty());
}

TEST(BenchmarkHistory, SeriesByBranchCutToTheNewestInTheNewestUnit) {
  std::vector<store::BenchmarkResult> records;
  records.push_back(result(1, 2.5, "main", "ms"));  // stored in ms before the parser kept ns
  records.push_back(result(2, 9.0, "topic"));
  for (int i = 3; i <= 6; ++i) records.push_back(result(i, 2.0e6));
  auto history = benchmark_history(records, 0);
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].branch, "main");
  EXPECT_EQ((*history)[1].branch, "topic");
  EXPECT_EQ((*history)[0].points.front().value, 2.5e6);
  auto cut = benchmark_history(records, 3);
  ASSERT_TRUE(cut);
  ASSERT_EQ((*cut)[0].points.size(), 3u);
  EXPECT_EQ((*cut)[0].points.front().id, 4);
}

TEST(BenchmarkHistory, AUnitThatDoesNotConvertIsAnError) {
  std::vector<store::BenchmarkResult> records{result(1, 5, "main", "items/s"), result(2, 2.0e6)};
  EXPECT_FALSE(benchmark_history(records, 0));
}

}  // namespace
}  // namespace kiln::perf
