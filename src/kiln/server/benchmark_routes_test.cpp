// GET /api/benchmarks's document from a real store: each benchmark of the repositories asked
// for, by name, its series with the change point the dashboard marks.

#include "kiln/server/benchmark_routes.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fmt/format.h>

#include "kiln/store/sqlite_store.h"

namespace kiln::server {
namespace {

TEST(BenchmarksJson, EveryBenchmarkOfTheRepositoryWithItsChangePoints) {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-bench-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  auto store = store::open_sqlite_store(dir / "kiln.db");
  ASSERT_TRUE(store);
  std::vector<store::BenchmarkResult> results;
  auto add = [&](const std::string& repository, const std::string& name, int i, double value) {
    store::BenchmarkResult r;
    r.repository = repository;
    r.benchmark = name;
    r.metric = "value";
    r.unit = "ms";
    r.direction = "smaller_is_better";
    r.branch = "main";
    r.commit_sha = fmt::format("{:040x}", i);
    r.time = 1000 + i;
    r.value = value;
    r.source = "bench.json";
    r.format = "custom";
    results.push_back(r);
  };
  for (int i = 0; i < 16; ++i) {
    add("acme/kernels", "softmax", i, 1.0 + (i % 2) * 0.01);
    add("acme/kernels", "attention", i, (i < 8 ? 2.0 : 3.0) + (i % 3) * 0.01);
    add("acme/other", "gemm", i, 5.0);
  }
  ASSERT_TRUE((*store)->add_benchmark_results(results));
  auto doc = benchmarks_json(**store, {"acme/kernels"}, 14);
  ASSERT_TRUE(doc);
  const auto& benchmarks = (*doc)["benchmarks"];
  ASSERT_EQ(benchmarks.size(), 2u);
  EXPECT_EQ(benchmarks[0]["benchmark"], "attention");
  EXPECT_EQ(benchmarks[0]["repository"], "acme/kernels");
  EXPECT_EQ(benchmarks[1]["benchmark"], "softmax");
  const auto& attention = benchmarks[0]["series"][0];
  EXPECT_EQ(attention["points"].size(), 14u);  // the newest 14 of 16
  ASSERT_EQ(attention["change_points"].size(), 1u);
  EXPECT_EQ(attention["change_points"][0]["index"], 6);  // point 8 of 16 is the 7th of the last 14
  EXPECT_EQ(attention["change_points"][0]["commit"], fmt::format("{:040x}", 8));
  EXPECT_EQ(attention["points"][0]["value_text"], "2.02 ms");
  EXPECT_TRUE(benchmarks[1]["series"][0]["change_points"].empty());
  auto none = benchmarks_json(**store, {"acme/missing"}, 10);
  ASSERT_TRUE(none);
  EXPECT_TRUE((*none)["benchmarks"].empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::server
