// The Prometheus exposition: a strict reading of the text format (every line a comment of the
// right shape or a sample of a declared family, label values escaped, no family twice, no
// series twice). The integration test (tests/integration/metrics_test.sh) also runs promtool.

#include "kiln/report/metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace kiln::report {
namespace {

// Returns the problems of `text`, one per line; empty when it is well formed.
std::vector<std::string> check_exposition(const std::string& text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n]*)");
  static const std::regex type(
      R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")*\})? (-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|NaN|[+-]Inf))");
  std::vector<std::string> problems;
  std::set<std::string> typed, helped, series;
  std::string current;
  bool histogram = false;  // the current family's samples are NAME_bucket, NAME_sum, NAME_count
  std::istringstream in(text);
  int number = 0;
  if (!text.empty() && text.back() != '\n') problems.push_back("no newline at the end");
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      if (!helped.insert(m[1]).second) problems.push_back(fmt::format("{}: HELP twice", number));
      current = m[1];
    } else if (std::regex_match(line, m, type)) {
      if (!typed.insert(m[1]).second) problems.push_back(fmt::format("{}: TYPE twice", number));
      if (m[1] != current) problems.push_back(fmt::format("{}: TYPE apart from its HELP", number));
      histogram = m[2] == "histogram";
    } else if (std::regex_match(line, m, sample)) {
      const std::string name = m[1];
      const bool in_family = histogram ? name == current + "_bucket" || name == current + "_sum" ||
                                             name == current + "_count"
                                       : name == current;
      if (!in_family) problems.push_back(fmt::format("{}: sample outside its family", number));
      if (!series.insert(m[1].str() + m[2].str()).second)
        problems.push_back(fmt::format("{}: series twice", number));
    } else {
      problems.push_back(fmt::format("{}: not a metric line: {}", number, line));
    }
  }
  return problems;
}

GpuMetrics gpu(int index) {
  GpuMetrics g;
  g.index = index;
  g.uuid = fmt::format("GPU-{:04}", index);
  g.device = fmt::format("nvidia{}", index);
  g.model = "NVIDIA H200";
  g.hostname = "gpu-01";
  g.state = "free";
  g.memory_used_mib = 1024;
  g.memory_free_mib = 142000;
  return g;
}

TEST(MetricsTest, DcgmNamesAndLabels) {
  auto g = gpu(0);
  g.utilization_percent = 87.5;
  g.temperature_c = 41;
  g.power_w = 312.25;
  g.energy_mj = 123456789;
  KilnMetrics kiln;
  kiln.store_read = true;
  kiln.runs_by_status = {{"success", 3}, {"running", 1}};
  kiln.jobs_by_status = {{"running", 2}, {"queued", 1}};
  kiln.gpu_leases = 1;
  auto text = render_prometheus({g, gpu(1)}, kiln);
  EXPECT_TRUE(check_exposition(text).empty())
      << testing::PrintToString(check_exposition(text)) << "\n"
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0000\",device=\"nvidia0\","
                      "modelName=\"NVIDIA H200\",Hostname=\"gpu-01\"} 87.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("} 142000\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\""), std::string::npos);
  // GPU 1 has no utilization: its series is left out, not 0.
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("kiln_runs{status=\"success\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_runs{status=\"failure\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_jobs{status=\"running\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_gpu_leases 1\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_gpu_state{gpu=\"0\",UUID=\"GPU-0000\",device=\"nvidia0\",modelName="
                      "\"NVIDIA H200\",Hostname=\"gpu-01\",state=\"free\"} 1\n"),
            std::string::npos);
}

TEST(MetricsTest, SamplerGaugesAndProcessMemory) {
  auto g = gpu(0);
  g.memory_copy_utilization_percent = 31;
  g.sm_clock_mhz = 1980;
  g.memory_clock_mhz = 2619;
  g.clock_throttle_reasons = 4;
  g.process_memory_mib = {{4242, 2048}, {4243, 512}};
  auto other = gpu(1);
  other.process_memory_mib = {{4242, 100}};
  auto text = render_prometheus({g, other}, {});
  EXPECT_TRUE(check_exposition(text).empty())
      << testing::PrintToString(check_exposition(text)) << "\n"
      << text;
  const std::string labels =
      "{gpu=\"0\",UUID=\"GPU-0000\",device=\"nvidia0\",modelName=\"NVIDIA "
      "H200\",Hostname=\"gpu-01\"";
  EXPECT_NE(text.find("DCGM_FI_DEV_MEM_COPY_UTIL" + labels + "} 31\n"), std::string::npos) << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_SM_CLOCK" + labels + "} 1980\n"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_MEM_CLOCK" + labels + "} 2619\n"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + labels + "} 4\n"), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("kiln_gpu_process_memory_used_mib" + labels + ",pid=\"4242\"} 2048\n"),
            std::string::npos);
  EXPECT_NE(text.find("kiln_gpu_process_memory_used_mib{gpu=\"1\""), std::string::npos);
}

TEST(MetricsTest, UnknownFamiliesAreLeftOutAndLabelsEscaped) {
  auto g = gpu(0);
  g.model = "Weird \"GPU\"\\x\nY";
  auto text = render_prometheus({g}, {});
  EXPECT_TRUE(check_exposition(text).empty()) << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
  EXPECT_NE(text.find("modelName=\"Weird \\\"GPU\\\"\\\\x\\nY\""), std::string::npos) << text;
  // The store was not read: no kiln_runs family at all.
  EXPECT_EQ(text.find("kiln_runs"), std::string::npos);
  // No GPUs at all is still a valid exposition.
  auto empty = render_prometheus({}, {});
  EXPECT_TRUE(check_exposition(empty).empty()) << empty;
  EXPECT_NE(empty.find("kiln_gpus 0\n"), std::string::npos);
}

TEST(MetricsTest, ServeQueueAndWebhookFamilies) {
  KilnMetrics kiln;
  kiln.store_read = true;
  EXPECT_EQ(render_prometheus({}, kiln).find("kiln_serve_"), std::string::npos);
  ServeMetrics serve;
  serve.triggers_by_status = {{"queued", 3}, {"finished", 10}};
  serve.runs_running = 2;
  serve.webhook_deliveries = {{"accepted", 13}, {"bad_signature", 4}};
  kiln.serve = serve;
  auto text = render_prometheus({gpu(0)}, kiln);
  EXPECT_TRUE(check_exposition(text).empty()) << text;
  EXPECT_NE(text.find("kiln_serve_triggers{status=\"queued\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kiln_serve_triggers{status=\"waiting_approval\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_serve_runs_running 2\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_serve_webhook_deliveries_total{result=\"accepted\"} 13\n"),
            std::string::npos);
  EXPECT_NE(text.find("kiln_serve_webhook_deliveries_total{result=\"bad_signature\"} 4\n"),
            std::string::npos);
  EXPECT_NE(text.find("kiln_serve_webhook_deliveries_total{result=\"malformed\"} 0\n"),
            std::string::npos);
}

// kiln_job_queue_seconds: cumulative buckets per (runs-on labels, GPU model), the +Inf bucket
// equal to the count, the sum in seconds.
TEST(MetricsTest, QueueTimeHistogramByLabelsAndGpuModel) {
  KilnMetrics kiln;
  kiln.store_read = true;
  kiln.queue_waits = {{"self-hosted,gpu:2", "NVIDIA H200", 0.5},
                      {"self-hosted,gpu:2", "NVIDIA H200", 45},
                      {"self-hosted,gpu:2", "NVIDIA H200", 9000},
                      {"linux", "", 2},
                      {"say \"hi\"", "", 1}};
  auto text = render_prometheus({}, kiln);
  EXPECT_TRUE(check_exposition(text).empty())
      << testing::PrintToString(check_exposition(text)) << "\n"
      << text;
  const std::string h200 = "labels=\"self-hosted,gpu:2\",gpu_model=\"NVIDIA H200\"";
  for (const auto& [le, count] : std::vector<std::pair<std::string, int>>{
           {"1", 1}, {"30", 1}, {"60", 2}, {"7200", 2}, {"+Inf", 3}})
    EXPECT_NE(text.find(fmt::format("kiln_job_queue_seconds_bucket{{{},le=\"{}\"}} {}\n", h200, le,
                                    count)),
              std::string::npos)
        << le << "\n"
        << text;
  EXPECT_NE(text.find("kiln_job_queue_seconds_sum{" + h200 + "} 9045.5\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_job_queue_seconds_count{" + h200 + "} 3\n"), std::string::npos);
  EXPECT_NE(
      text.find("kiln_job_queue_seconds_bucket{labels=\"linux\",gpu_model=\"\",le=\"1\"} 0\n"),
      std::string::npos);
  EXPECT_NE(
      text.find("kiln_job_queue_seconds_bucket{labels=\"linux\",gpu_model=\"\",le=\"5\"} 1\n"),
      std::string::npos);
  EXPECT_NE(text.find("labels=\"say \\\"hi\\\"\""), std::string::npos) << text;
}

TEST(MetricsTest, TheCheckerCatchesBrokenText) {
  EXPECT_FALSE(check_exposition("metric{a=\"unterminated} 1\n").empty());
  EXPECT_FALSE(check_exposition("# TYPE m gauge\nm 1\n").empty());  // TYPE without HELP
  EXPECT_FALSE(check_exposition("# HELP m x\n# TYPE m gauge\nm 1\nm 1\n").empty());
  EXPECT_FALSE(check_exposition("# HELP m x\n# TYPE m gauge\nm one\n").empty());
  EXPECT_TRUE(check_exposition("# HELP m x\n# TYPE m gauge\nm{a=\"\\\"\"} 1.5e3\n").empty());
  EXPECT_FALSE(check_exposition("# HELP m x\n# TYPE m gauge\nm_bucket{le=\"1\"} 1\n").empty());
  EXPECT_TRUE(check_exposition("# HELP m x\n# TYPE m histogram\nm_bucket{le=\"1\"} 1\nm_count 1\n")
                  .empty());
}

}  // namespace
}  // namespace kiln::report
