// The engine's perf gate hook against a real SQLite store: the testbed string, ingestion of
// the lines added to $KILN_BENCHMARKS since the last step, errors for bad files, and the gate.

#include "kiln/engine/gate/benchmarks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "kiln/store/sqlite_store.h"

namespace kiln::engine {
namespace {

TEST(Testbed, GpusDriversAndSortedLabels) {
  gpu::GpuInfo h200;
  h200.vendor = "nvidia";
  h200.model = "NVIDIA H200";
  h200.driver_version = "550.54.15";
  EXPECT_EQ(make_testbed({"self-hosted", "gpu:2"}, {h200, h200}),
            "gpus=NVIDIA H200 x2; driver=550.54.15; labels=gpu:2,self-hosted");
  EXPECT_EQ(make_testbed({"ubuntu-latest"}, {}), "gpus=none; labels=ubuntu-latest");
}

class CollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-bench-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto opened = store::open_sqlite_store(dir_ / "kiln.db");
    ASSERT_TRUE(opened);
    store_ = std::move(*opened);
    store::Run run;
    run.repository = dir_.string();
    run.workflow_path = "ci.yml";
    run.workflow_name = "CI";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "abc";
    auto created = store_->create_run(run);
    ASSERT_TRUE(created);
    run_id_ = created->id;
    store::Job job;
    job.run_id = run_id_;
    job.key = "bench";
    job.workflow_job_id = "bench";
    job.name = "bench";
    auto job_row = store_->create_job(job);
    ASSERT_TRUE(job_row);
    job_id_ = *job_row;
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  BenchmarkContext context() const {
    return {.repository = "acme/k",
            .branch = "main",
            .default_branch = "main",
            .commit = "abc",
            .testbed = "gpus=none; labels=linux",
            .run_id = run_id_,
            .job_id = job_id_};
  }
  void write(const std::string& name, double level) {
    std::ofstream out(dir_ / name);
    out << "[{\"name\": \"attn\", \"unit\": \"ms\", \"value\": " << level << ", \"samples\": [";
    for (int i = 0; i < 10; ++i)
      out << (i ? ", " : "") << level * (1 + 0.001 * ((i * 7) % 10 - 4.5));
    out << "]}]";
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::int64_t run_id_ = 0, job_id_ = 0;
};

TEST_F(CollectorTest, IngestsOnlyNewLinesRelativeToTheWorkspace) {
  write("a.json", 100);
  std::ofstream(dir_ / "list.txt") << "a.json\n\n";
  BenchmarkCollector collector(*store_, context());
  auto lines = collector.collect(dir_ / "list.txt", dir_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].first, "kiln");
  EXPECT_NE(lines[0].second.find("1 metric(s) from a.json (custom)"), std::string::npos);
  // Nothing new: nothing read again.
  EXPECT_TRUE(collector.collect(dir_ / "list.txt", dir_).empty());
  store::BenchmarkQuery query;
  query.run_id = run_id_;
  auto stored = store_->list_benchmark_results(query);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ(stored->at(0).job_id, job_id_);
  EXPECT_EQ(stored->at(0).testbed, "gpus=none; labels=linux");
  EXPECT_EQ(stored->at(0).samples.size(), 10u);
}

TEST_F(CollectorTest, BadFileIsAnErrorNamingTheField) {
  std::ofstream(dir_ / "bad.json") << R"([{"name": "x", "unit": "ms"}])";
  std::ofstream(dir_ / "list.txt") << (dir_ / "bad.json").string() << "\n"
                                   << "missing.json\n";
  BenchmarkCollector collector(*store_, context());
  auto lines = collector.collect(dir_ / "list.txt", dir_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first, "error");
  EXPECT_NE(lines[0].second.find("bad.json: error: [0].value: missing"), std::string::npos);
  EXPECT_EQ(lines[1].first, "error");
  EXPECT_NE(lines[1].second.find("missing.json"), std::string::npos);
}

TEST_F(CollectorTest, AUnitThatDoesNotConvertFailsTheFileNamingTheField) {
  std::ofstream(dir_ / "rate.json") << R"([{"name": "copy", "unit": "MB/s", "value": 5}])";
  std::ofstream(dir_ / "renamed.json") << R"([{"name": "copy", "unit": "GB/s", "value": 5}])";
  std::ofstream(dir_ / "list.txt") << "rate.json\nrenamed.json\n";
  BenchmarkCollector collector(*store_, context());
  auto lines = collector.collect(dir_ / "list.txt", dir_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first, "kiln");
  EXPECT_EQ(lines[1].first, "error");
  EXPECT_NE(lines[1].second.find("renamed.json: error: [0].unit: 'GB/s' is not the unit 'MB/s'"),
            std::string::npos)
      << lines[1].second;
}

TEST_F(CollectorTest, GateFailsOnARegressionUnlessTurnedOff) {
  // History: a result of an earlier run on main, same testbed.
  write("old.json", 100);
  auto old_context = context();
  old_context.run_id = 0;
  old_context.job_id = 0;
  BenchmarkCollector earlier(*store_, old_context);
  std::ofstream(dir_ / "old.txt") << "old.json\n";
  (void)earlier.collect(dir_ / "old.txt", dir_);

  write("new.json", 120);
  std::ofstream(dir_ / "list.txt") << "new.json\n";
  BenchmarkCollector collector(*store_, context());
  (void)collector.collect(dir_ / "list.txt", dir_);
  auto verdict = collector.gate({});
  EXPECT_TRUE(verdict.failed);
  EXPECT_NE(verdict.reason.find("performance regression: attn +20"), std::string::npos);
  bool table = false;
  for (const auto& [kind, text] : verdict.lines)
    table = table || text.find("BENCHMARK") != std::string::npos;
  EXPECT_TRUE(table);

  EXPECT_FALSE(collector.gate({{"KILN_PERF_GATE", "off"}}).failed);
  EXPECT_FALSE(collector.gate({{"KILN_PERF_GATE", "warn"}}).failed);
  EXPECT_TRUE(collector.gate({{"KILN_PERF_GATE", "enforce"}}).failed);
  auto unknown = collector.gate({{"KILN_PERF_GATE", "Off"}});
  EXPECT_TRUE(unknown.failed);
  EXPECT_NE(unknown.reason.find("KILN_PERF_GATE=Off: expected"), std::string::npos)
      << unknown.reason;
  EXPECT_FALSE(collector.gate({{"KILN_PERF_THRESHOLD", "25"}}).failed);
  auto warned = collector.gate({{"KILN_PERF_THRESHOLD", "lots"}});
  EXPECT_EQ(warned.lines.front().first, "warning");
}

}  // namespace
}  // namespace kiln::engine
