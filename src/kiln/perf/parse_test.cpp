// Every format on a realistic file, and malformed files giving errors that name the file and
// the field.

#include "kiln/perf/parse.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

namespace kiln::perf {
namespace {

const Measurement* find(const ResultFile& file, std::string_view name, std::string_view metric) {
  for (const auto& m : file.measurements)
    if (m.name == name && m.metric == metric) return &m;
  return nullptr;
}

constexpr std::string_view k_google = R"({
  "context": {"date": "2026-11-30T06:00:00+00:00", "num_cpus": 16, "library_build_type": "release"},
  "benchmarks": [
    {"name": "BM_Gemm/512", "family_index": 0, "per_family_instance_index": 0, "run_name": "BM_Gemm/512",
     "run_type": "iteration", "repetitions": 3, "repetition_index": 0, "threads": 1, "iterations": 100,
     "real_time": 1.5, "cpu_time": 1.4, "time_unit": "us", "items_per_second": 2.0e6, "flops": 7.5e11},
    {"name": "BM_Gemm/512", "run_name": "BM_Gemm/512", "run_type": "iteration", "repetitions": 3,
     "repetition_index": 1, "iterations": 100, "real_time": 1.7, "cpu_time": 1.6, "time_unit": "us",
     "items_per_second": 1.8e6, "flops": 7.0e11},
    {"name": "BM_Gemm/512", "run_name": "BM_Gemm/512", "run_type": "iteration", "repetitions": 3,
     "repetition_index": 2, "iterations": 100, "real_time": 1.6, "cpu_time": 1.5, "time_unit": "us",
     "items_per_second": 1.9e6, "flops": 7.2e11},
    {"name": "BM_Gemm/512_mean", "run_name": "BM_Gemm/512", "run_type": "aggregate", "aggregate_name": "mean",
     "aggregate_unit": "time", "iterations": 3, "real_time": 1.6, "cpu_time": 1.5, "time_unit": "us"},
    {"name": "BM_Gemm/512_stddev", "run_name": "BM_Gemm/512", "run_type": "aggregate", "aggregate_name": "stddev",
     "iterations": 3, "real_time": 0.1, "cpu_time": 0.1, "time_unit": "us"},
    {"name": "BM_Only/1_mean", "run_name": "BM_Only/1", "run_type": "aggregate", "aggregate_name": "mean",
     "iterations": 3, "real_time": 20, "cpu_time": 19, "time_unit": "ms"},
    {"name": "BM_Only/1_median", "run_name": "BM_Only/1", "run_type": "aggregate", "aggregate_name": "median",
     "iterations": 3, "real_time": 21, "cpu_time": 18, "time_unit": "ms"},
    {"name": "BM_Broken", "run_name": "BM_Broken", "run_type": "iteration", "error_occurred": true,
     "error_message": "out of device memory", "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"}
  ]
})";

TEST(Parse, GoogleBenchmarkRepetitionsBecomeSamplesInNanoseconds) {
  auto file = parse_results(k_google, "gbench.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->format, "google-benchmark");
  const auto* real = find(*file, "BM_Gemm/512", "real_time");
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(real->unit, "ns");
  EXPECT_EQ(real->direction, Direction::smaller_is_better);
  // Three repetitions, the aggregates (mean 1.6, stddev 0.1) not among them.
  ASSERT_EQ(real->samples.size(), 3u);
  EXPECT_DOUBLE_EQ(real->samples[0], 1500);
  EXPECT_DOUBLE_EQ(real->samples[1], 1700);
  EXPECT_DOUBLE_EQ(real->value, 1600);
  const auto* rate = find(*file, "BM_Gemm/512", "items_per_second");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->direction, Direction::bigger_is_better);
  EXPECT_EQ(rate->samples.size(), 3u);
  const auto* counter = find(*file, "BM_Gemm/512", "flops");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(counter->samples.size(), 3u);
  EXPECT_EQ(find(*file, "BM_Gemm/512", "iterations"), nullptr);
  EXPECT_EQ(find(*file, "BM_Gemm/512", "repetition_index"), nullptr);
}

TEST(Parse, GoogleBenchmarkAggregatesOnlyGiveAValueNotSamples) {
  auto file = parse_results(k_google, "gbench.json");
  ASSERT_TRUE(file);
  const auto* only = find(*file, "BM_Only/1", "real_time");
  ASSERT_NE(only, nullptr);
  EXPECT_TRUE(only->samples.empty());
  EXPECT_DOUBLE_EQ(only->value, 21e6);  // the median row, in ns
  EXPECT_DOUBLE_EQ(find(*file, "BM_Only/1", "cpu_time")->value, 18e6);
  EXPECT_EQ(find(*file, "BM_Only/1_mean", "real_time"), nullptr);
}

TEST(Parse, GoogleBenchmarkErrorRowsAreNotedAndSkipped) {
  auto file = parse_results(k_google, "gbench.json");
  ASSERT_TRUE(file);
  EXPECT_EQ(find(*file, "BM_Broken", "real_time"), nullptr);
  ASSERT_EQ(file->notes.size(), 1u);
  EXPECT_NE(file->notes[0].find("out of device memory"), std::string::npos);
}

TEST(Parse, GoogleBenchmarkMalformedFieldIsNamed) {
  auto file = parse_results(R"({"context": {}, "benchmarks": [
      {"name": "BM_A", "run_type": "iteration", "real_time": 1, "cpu_time": 1, "time_unit": "ns"},
      {"name": "BM_A", "run_type": "iteration", "real_time": "fast", "cpu_time": 1, "time_unit": "ns"}]})",
                            "out/bench.json");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, ErrorCode::invalid_input);
  EXPECT_EQ(file.error().to_string(),
            "out/bench.json: error: benchmarks[1].real_time: expected a number, got a string");
  auto unit = parse_results(R"({"context": {}, "benchmarks": [
      {"name": "BM_A", "real_time": 1, "cpu_time": 1, "time_unit": "fortnights"}]})",
                            "b.json");
  ASSERT_FALSE(unit);
  EXPECT_NE(
      unit.error().to_string().find("benchmarks[0].time_unit: unknown time unit 'fortnights'"),
      std::string::npos);
}

TEST(Parse, PytestBenchmarkUsesRawDataWhenPresent) {
  auto file = parse_results(R"({"machine_info": {"node": "gpu1"}, "benchmarks": [
      {"group": null, "name": "test_read", "fullname": "tests/test_io.py::test_read",
       "stats": {"min": 0.001, "max": 0.003, "mean": 0.002, "median": 0.002, "rounds": 3,
                 "data": [0.001, 0.002, 0.003]}},
      {"name": "test_write", "fullname": "tests/test_io.py::test_write",
       "stats": {"min": 0.01, "max": 0.03, "mean": 0.02, "median": 0.025, "rounds": 5}}],
      "version": "4.0.0"})",
                            "pytest.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->format, "pytest-benchmark");
  const auto* read = find(*file, "tests/test_io.py::test_read", "time");
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->samples.size(), 3u);
  EXPECT_NEAR(read->samples[2], 3e6, 1e-6);
  EXPECT_NEAR(read->value, 2e6, 1e-6);
  const auto* write = find(*file, "tests/test_io.py::test_write", "time");
  ASSERT_NE(write, nullptr);
  EXPECT_TRUE(write->samples.empty());
  EXPECT_NEAR(write->value, 2.5e7, 1e-3);
  auto bad = parse_results(
      R"({"machine_info": {}, "benchmarks": [{"name": "t", "stats": {"mean": 1}}]})", "p.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().to_string(), "p.json: error: benchmarks[0].stats.median: missing");
}

TEST(Parse, GoTestRepeatedLinesAreSamples) {
  constexpr std::string_view k_go = R"(goos: linux
goarch: amd64
pkg: example.com/kernels
cpu: AMD EPYC 9654 96-Core Processor
BenchmarkSum/n=1024-16         	 1000000	      1200 ns/op	     512 B/op	       2 allocs/op	  850.5 MB/s
BenchmarkSum/n=1024-16         	 1000000	      1250 ns/op	     512 B/op	       2 allocs/op	  820.0 MB/s
BenchmarkSum/n=1024-16         	 1000000	      1190 ns/op	     512 B/op	       2 allocs/op	  860.1 MB/s
BenchmarkLaunch-16             	    5000	    250000 ns/op	        3.5 kernels/op
PASS
ok  	example.com/kernels	4.2s
)";
  auto file = parse_results(k_go, "go.txt");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->format, "go-test");
  const auto* time = find(*file, "example.com/kernels.BenchmarkSum/n=1024", "time");
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->unit, "ns");
  ASSERT_EQ(time->samples.size(), 3u);
  EXPECT_DOUBLE_EQ(time->value, (1200.0 + 1250 + 1190) / 3);  // the mean: no far outliers
  const auto* throughput = find(*file, "example.com/kernels.BenchmarkSum/n=1024", "MB/s");
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->direction, Direction::bigger_is_better);
  const auto* allocs = find(*file, "example.com/kernels.BenchmarkSum/n=1024", "allocs/op");
  ASSERT_NE(allocs, nullptr);
  EXPECT_EQ(allocs->direction, Direction::smaller_is_better);
  EXPECT_NE(find(*file, "example.com/kernels.BenchmarkLaunch", "kernels/op"), nullptr);
}

TEST(Parse, GoTestBadValueNamesLineAndColumn) {
  auto file = parse_results("BenchmarkX-8  100  12x ns/op\n", "go.txt");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().to_string(),
            "go.txt:1:20: error: benchmark value: expected a number, got '12x'");
}

class ParseFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-perf-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  void write(const std::filesystem::path& path, std::string_view text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ParseFilesTest, CriterionEstimatesWithSamplesAndName) {
  auto dir = dir_ / "target" / "criterion" / "gemm" / "512" / "new";
  write(dir / "estimates.json", R"({"mean": {"point_estimate": 1100.0, "standard_error": 3},
      "median": {"point_estimate": 1050.0, "standard_error": 2}, "median_abs_dev": {"point_estimate": 5},
      "slope": null, "std_dev": {"point_estimate": 20}})");
  write(dir / "benchmark.json", R"({"group_id": "gemm", "function_id": null, "value_str": "512",
      "full_id": "gemm/512", "title": "gemm/512"})");
  write(dir / "sample.json",
        R"({"sampling_mode": "Linear", "iters": [10, 20, 30], "times": [10000, 21000, 33000]})");
  auto file = parse_result_file(dir / "estimates.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->format, "criterion");
  ASSERT_EQ(file->measurements.size(), 1u);
  const auto& m = file->measurements[0];
  EXPECT_EQ(m.name, "gemm/512");
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(m.samples[1], 1050);
  EXPECT_DOUBLE_EQ(m.value, 1050);
}

TEST_F(ParseFilesTest, CriterionWithoutSideFilesTakesTheNameFromThePath) {
  auto path = dir_ / "target" / "criterion" / "fft" / "new" / "estimates.json";
  write(path, R"({"mean": {"point_estimate": 7}, "median": {"point_estimate": 6.5}})");
  auto file = parse_result_file(path);
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->measurements[0].name, "fft");
  EXPECT_TRUE(file->measurements[0].samples.empty());
  EXPECT_DOUBLE_EQ(file->measurements[0].value, 6.5);
  EXPECT_FALSE(parse_result_file(dir_ / "missing.json"));
}

TEST(Parse, CustomArrayWithSamplesDirectionAndThreshold) {
  auto file = parse_results(R"([
      {"name": "attention fwd", "unit": "ms", "value": 1.25, "samples": [1.2, 1.3, 1.25, 1.22, 1.28]},
      {"name": "tokens", "unit": "tokens/s", "value": 5000},
      {"name": "vram", "unit": "MiB", "value": 800, "direction": "customBiggerIsBetter", "threshold": 10}])",
                            "custom.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->format, "custom");
  const auto* fwd = find(*file, "attention fwd", "value");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->samples.size(), 5u);
  EXPECT_EQ(fwd->unit, "ns");  // times are kept in ns
  EXPECT_NEAR(fwd->value, 1.25e6, 1e-6);
  EXPECT_EQ(fwd->direction, Direction::smaller_is_better);
  EXPECT_EQ(find(*file, "tokens", "value")->direction, Direction::bigger_is_better);
  const auto* vram = find(*file, "vram", "value");
  EXPECT_EQ(vram->direction, Direction::bigger_is_better);
  ASSERT_TRUE(vram->threshold_percent);
  EXPECT_EQ(*vram->threshold_percent, 10);
}

TEST(Parse, CustomToolObjectSetsTheDirection) {
  auto file = parse_results(
      R"({"tool": "customBiggerIsBetter", "benchmarks": [{"name": "x", "unit": "ms", "value": 3}]})",
      "c.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_EQ(file->measurements[0].direction, Direction::bigger_is_better);
}

TEST(Parse, CustomErrorsNameTheField) {
  struct Case {
    std::string_view text, message;
  };
  const Case cases[] = {
      {R"([{"name": "x", "value": 1}])", "c.json: error: [0].unit: missing"},
      {R"([{"name": "x", "unit": "ms", "value": null}])",
       "c.json: error: [0].value: expected a number, got null"},
      {R"([{"name": "x", "unit": "ms", "value": 1, "samples": [1, "2"]}])",
       "c.json: error: [0].samples[1]: expected a number"},
      {R"([{"name": "x", "unit": "ms", "value": 1, "direction": "up"}])",
       "c.json: error: [0].direction: unknown direction 'up' (smaller_is_better, bigger_is_better, "
       "customSmallerIsBetter, customBiggerIsBetter)"},
      {R"([{"name": "x", "unit": "ms", "value": 1}, {"name": "x", "unit": "ms", "value": 2}])",
       "c.json: error: [1].name: benchmark 'x' (metric 'value') appears twice"},
      {R"([7])", "c.json: error: [0]: expected an object, got a number"},
  };
  for (const auto& c : cases) {
    auto file = parse_results(c.text, "c.json");
    ASSERT_FALSE(file) << c.text;
    EXPECT_EQ(file.error().to_string(), c.message);
  }
}

TEST(Parse, InvalidJsonAndUnknownContentAreLocated) {
  auto broken = parse_results("{\n  \"benchmarks\": [\n    {,\n", "b.json");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::invalid_input);
  EXPECT_EQ(broken.error().where.file, "b.json");
  EXPECT_EQ(broken.error().where.line, 3);
  auto prose = parse_results("hello\nworld\n", "notes.txt");
  ASSERT_FALSE(prose);
  EXPECT_NE(prose.error().to_string().find("notes.txt: error: not a benchmark result"),
            std::string::npos);
  EXPECT_FALSE(parse_results("", "empty.json"));
  auto unknown = parse_results(R"({"hello": 1})", "u.json");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown benchmark JSON"), std::string::npos);
}

TEST(Parse, NumbersTooLargeForADoubleAreLocatedErrors) {
  // Issue 29: json::out_of_range escaped the parser and aborted kiln run.
  auto file = parse_results(R"({"context": 11111111111111111111111E11111111111, "benchmarks": []})",
                            "bench.json");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, ErrorCode::invalid_input);
  EXPECT_EQ(file.error().where.line, 1);
  EXPECT_GT(file.error().where.column, 12);
  EXPECT_NE(
      file.error().to_string().find("bench.json:1:" + std::to_string(file.error().where.column) +
                                    ": error: context: not valid JSON: number overflow parsing "
                                    "'11111111111111111111111E11111111111'"),
      std::string::npos)
      << file.error().to_string();
  auto nested =
      parse_results("[{\"name\": \"x\", \"unit\": \"ms\",\n  \"value\": 1e999}]", "c.json");
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().where.line, 2);
  EXPECT_NE(nested.error().to_string().find("error: [0].value: not valid JSON: number overflow"),
            std::string::npos)
      << nested.error().to_string();
  auto in_array = parse_results(
      R"([{"name": "x", "unit": "ms", "value": 1, "samples": [1, 2, 1E400]}])", "c.json");
  ASSERT_FALSE(in_array);
  EXPECT_NE(in_array.error().message.find("[0].samples[2]: not valid JSON"), std::string::npos)
      << in_array.error().to_string();
}

TEST(Parse, FieldsOfTheWrongTypeAreNeverAnException) {
  // Flags and texts that are read with a default must not throw when they hold another type.
  auto file = parse_results(R"({"context": {}, "benchmarks": [
      {"name": "BM_A", "run_type": "iteration", "real_time": 2, "cpu_time": 2, "error_occurred": "no"},
      {"name": "BM_B", "run_type": "iteration", "real_time": 1, "cpu_time": 1, "error_occurred": true,
       "error_message": 42},
      {"name": "BM_C_mean", "run_name": "BM_C", "run_type": "aggregate", "aggregate_name": 7,
       "real_time": 1, "cpu_time": 1}]})",
                            "g.json");
  ASSERT_TRUE(file) << file.error().to_string();
  EXPECT_NE(find(*file, "BM_A", "real_time"), nullptr);
  ASSERT_EQ(file->notes.size(), 1u);
  EXPECT_EQ(file->notes[0], "BM_B: skipped (error)");
}

TEST(Parse, AFileWithoutBenchmarksIsAnError) {
  auto none = parse_results(R"({"context": {}, "benchmarks": []})", "e.json");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().to_string(), "e.json: error: benchmarks: no benchmark results");
  auto empty_array = parse_results("[]", "e.json");
  ASSERT_FALSE(empty_array);
  EXPECT_EQ(empty_array.error().to_string(), "e.json: error: no benchmark results");
  auto all_skipped = parse_results(R"({"context": {}, "benchmarks": [
      {"name": "BM_A", "run_type": "iteration", "real_time": 0, "cpu_time": 0, "error_occurred": true,
       "error_message": "out of memory"}]})",
                                   "e.json");
  ASSERT_FALSE(all_skipped);
  EXPECT_EQ(
      all_skipped.error().to_string(),
      "e.json: error: benchmarks: no benchmark results (every row skipped: BM_A: skipped (out "
      "of memory))");
}

TEST(Parse, TimesMustBePositive) {
  struct Case {
    std::string_view text, message;
  };
  const Case cases[] = {
      {R"([{"name": "x", "unit": "ms", "value": 0}])",
       "t.json: error: [0].value: a time must be positive, got 0"},
      {R"([{"name": "x", "unit": "s", "value": 1, "samples": [1, -0.5]}])",
       "t.json: error: [0].samples[1]: a time must be positive, got -0.5"},
      {R"({"context": {}, "benchmarks": [{"name": "BM", "real_time": -3, "cpu_time": 1}]})",
       "t.json: error: benchmarks[0].real_time: a time must be positive, got -3"},
      {R"({"machine_info": {}, "benchmarks": [{"name": "t", "stats": {"median": 0}}]})",
       "t.json: error: benchmarks[0].stats.median: a time must be positive, got 0"},
  };
  for (const auto& c : cases) {
    auto file = parse_results(c.text, "t.json");
    ASSERT_FALSE(file) << c.text;
    EXPECT_EQ(file.error().to_string(), c.message);
  }
  auto go = parse_results("BenchmarkX-8  100  0 ns/op\n", "go.txt");
  ASSERT_FALSE(go);
  EXPECT_EQ(go.error().to_string(),
            "go.txt:1:20: error: benchmark value: a time must be positive, got 0");
  auto nan = parse_results("BenchmarkX-8  100  NaN ns/op\n", "go.txt");
  ASSERT_FALSE(nan);
  EXPECT_EQ(nan.error().to_string(),
            "go.txt:1:20: error: benchmark value: expected a number, got 'NaN'");
  // Zero is a fine count: no allocations.
  EXPECT_TRUE(parse_results("BenchmarkX-8  100  5 ns/op  0 B/op  0 allocs/op\n", "go.txt"));
  // A benchmark name that is not UTF-8 cannot go into a JSON report.
  auto bytes = parse_results("BenchmarkX\xff-8  100  5 ns/op\n", "go.txt");
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error().to_string(), "go.txt:1:1: error: benchmark name: not valid UTF-8");
}

TEST(Parse, CustomTimeUnitsAreKeptInNanoseconds) {
  auto file = parse_results(R"([{"name": "a", "unit": "s", "value": 0.25, "samples": [0.2, 0.3]},
      {"name": "b", "unit": "us", "value": 3}, {"name": "c", "unit": "MiB", "value": 8}])",
                            "c.json");
  ASSERT_TRUE(file) << file.error().to_string();
  const auto* a = find(*file, "a", "value");
  EXPECT_EQ(a->unit, "ns");
  EXPECT_DOUBLE_EQ(a->samples[1], 3e8);
  EXPECT_DOUBLE_EQ(a->value, 2.5e8);
  EXPECT_EQ(a->field, "[0]");
  EXPECT_DOUBLE_EQ(find(*file, "b", "value")->value, 3000);
  EXPECT_EQ(find(*file, "c", "value")->unit, "MiB");
}

}  // namespace
}  // namespace kiln::perf
