// Run reports from a real SQLite store: the document, and the text, HTML and JUnit renderers.

#include "kiln/report/report.h"

#include <gtest/gtest.h>
#include <pugixml.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "kiln/report/junit.h"
#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::report {
namespace {

class ReportTest : public store::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto opened = store::open_sqlite_store(db_path());
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
    store::Run run;
    run.repository = "/src/kernels";
    run.workflow_path = ".github/workflows/ci.yml";
    run.workflow_name = "CI <nightly>";
    run.event = "push";
    run.ref = "refs/heads/main";
    run.sha = "0123456789abcdef";
    auto created = store_->create_run(run);
    ASSERT_TRUE(created);
    run_ = created->id;
    ASSERT_TRUE(store_->set_run_status(run_, store::RunStatus::running, 1000));
    ASSERT_TRUE(store_->set_run_status(run_, store::RunStatus::failure, 6000));

    store::Job gpu_job;
    gpu_job.run_id = run_;
    gpu_job.key = "gpu-tests";
    gpu_job.workflow_job_id = "gpu-tests";
    gpu_job.name = "gpu tests";
    gpu_job.labels = {"self-hosted", "gpu:1"};
    gpu_job.extra = {{"gpus", {{{"index", 0}, {"uuid", "GPU-aaaa"}, {"model", "NVIDIA H200"}}}},
                     {"gpu", {{"peak_memory_mib", 40960}, {"mean_utilization", 87.5}}}};
    auto gpu_row = store_->create_job(gpu_job);
    ASSERT_TRUE(gpu_row);
    gpu_job_ = *gpu_row;
    gpu_job.id = gpu_job_;
    gpu_job.status = store::JobStatus::failure;
    gpu_job.conclusion = store::Conclusion::failure;
    gpu_job.started_at = 1000;
    gpu_job.finished_at = 5000;
    gpu_job.message = "Process completed with exit code 1.";
    ASSERT_TRUE(store_->update_job(gpu_job));
    store::Step step;
    step.job_id = gpu_job_;
    step.index = 0;
    step.name = "Run pytest";
    step.status = store::JobStatus::failure;
    step.conclusion = store::Conclusion::failure;
    step.exit_code = 1;
    step.started_at = 1100;
    step.finished_at = 4900;
    ASSERT_TRUE(store_->create_step(step));

    store::Job lint;
    lint.run_id = run_;
    lint.key = "lint";
    lint.workflow_job_id = "lint";
    lint.name = "lint";
    auto lint_row = store_->create_job(lint);
    ASSERT_TRUE(lint_row);
    lint.id = *lint_row;
    lint.status = store::JobStatus::success;
    lint.conclusion = store::Conclusion::success;
    lint.started_at = 1000;
    lint.finished_at = 1500;
    ASSERT_TRUE(store_->update_job(lint));
    step = {};
    step.job_id = *lint_row;
    step.index = 0;
    step.name = "Check <format>";
    step.status = store::JobStatus::success;
    step.conclusion = store::Conclusion::success;
    step.started_at = 1000;
    step.finished_at = 1400;
    ASSERT_TRUE(store_->create_step(step));

    // The pytest sample of the fuzz corpus, stored as the engine stores it.
    auto parsed =
        parse_junit_file(std::filesystem::path(KILN_SOURCE_DIR) / "fuzz/corpus/junit/pytest.xml");
    ASSERT_TRUE(parsed);
    std::vector<store::TestCase> rows;
    for (const auto& c : parsed->cases) {
      store::TestCase& row = rows.emplace_back();
      row.run_id = run_;
      row.job_id = gpu_job_;
      row.repository = "acme/kernels";
      row.commit_sha = run.sha;
      row.suite = c.suite;
      row.classname = c.classname;
      row.name = c.name;
      row.status = c.status;
      row.seconds = c.seconds;
      row.message = c.message;
      row.details = c.details;
      row.flaky = c.name == "test_add";
    }
    ASSERT_TRUE(store_->add_test_cases(rows));

    store::BenchmarkResult old_result;
    old_result.repository = "acme/kernels";
    old_result.benchmark = "BM_Gemm/4096";
    old_result.metric = "real_time";
    old_result.unit = "ns";
    old_result.direction = "smaller_is_better";
    old_result.branch = "main";
    old_result.testbed = "gpus=NVIDIA H200 x1";
    old_result.commit_sha = "aaaa";
    old_result.time = 100;
    old_result.value = 1200;
    auto this_result = old_result;
    this_result.time = 200;
    this_result.value = 1000;
    this_result.run_id = run_;
    this_result.job_id = gpu_job_;
    std::vector<store::BenchmarkResult> results = {old_result, this_result};
    ASSERT_TRUE(store_->add_benchmark_results(results));
  }

  std::unique_ptr<store::Store> store_;
  std::int64_t run_ = 0, gpu_job_ = 0;
};

TEST_F(ReportTest, DocumentHoldsJobsTestsAndBenchmarks) {
  auto report = build_run_report(*store_, run_);
  ASSERT_TRUE(report) << report.error().to_string();
  const auto& r = *report;
  EXPECT_EQ(r["run"]["status"], "failure");
  EXPECT_EQ(r["run"]["duration_ms"], 5000);
  ASSERT_EQ(r["jobs"].size(), 2u);
  const auto& job = r["jobs"][0];
  EXPECT_EQ(job["name"], "gpu tests");
  EXPECT_EQ(job["conclusion"], "failure");
  EXPECT_EQ(job["duration_ms"], 4000);
  EXPECT_EQ(job["gpus"][0]["uuid"], "GPU-aaaa");
  EXPECT_EQ(job["gpu_summary"]["peak_memory_mib"], 40960);
  EXPECT_EQ(job["steps"][0]["exit_code"], 1);
  EXPECT_EQ(job["tests"]["total"], 4);
  EXPECT_EQ(job["tests"]["failed"], 1);
  EXPECT_EQ(job["tests"]["errors"], 1);
  EXPECT_EQ(r["jobs"][1]["tests"]["total"], 0);
  EXPECT_EQ(r["tests"]["passed"], 1);
  EXPECT_EQ(r["tests"]["skipped"], 1);
  EXPECT_EQ(r["tests"]["flaky"], 1);
  ASSERT_EQ(r["tests"]["failures"].size(), 2u);
  EXPECT_EQ(r["tests"]["failures"][0]["test"], "tests.test_math::test_fail");
  EXPECT_EQ(r["tests"]["failures"][0]["message"], "assert 1 == 2");
  // Slowest first: test_fixture took 0.010s.
  EXPECT_EQ(r["tests"]["slowest"][0]["test"], "tests.test_math::test_fixture");
  ASSERT_EQ(r["benchmarks"].size(), 1u);
  EXPECT_EQ(r["benchmarks"][0]["job"], "gpu tests");
  EXPECT_EQ(r["benchmarks"][0]["history"], Json::parse("[1200.0, 1000.0]"));

  EXPECT_FALSE(build_run_report(*store_, 4242));
}

TEST_F(ReportTest, TextNamesJobsFailuresAndBenchmarks) {
  auto report = build_run_report(*store_, run_);
  ASSERT_TRUE(report);
  auto text = render_text(*report);
  EXPECT_NE(text.find("gpu tests"), std::string::npos) << text;
  EXPECT_NE(text.find("tests.test_math::test_fail (failed): assert 1 == 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("SLOWEST TESTS"), std::string::npos);
  EXPECT_NE(text.find("BM_Gemm/4096"), std::string::npos);
  EXPECT_NE(text.find("peak_memory_mib=40960"), std::string::npos);
}

TEST_F(ReportTest, HtmlIsSelfContainedAndEscaped) {
  ReportOptions options;
  options.gpu_samples = [](const store::Job& job) {
    if (job.key != "gpu-tests") return Json::array();
    return Json::parse(R"([{"gpu": "0", "points": [{"t": 0, "util": 10, "mem_mib": 100},
                                                   {"t": 1000, "util": 90, "mem_mib": 800}]}])");
  };
  auto report = build_run_report(*store_, run_, options);
  ASSERT_TRUE(report);
  auto html = render_html(*report);
  EXPECT_NE(html.find("CI &lt;nightly&gt;"), std::string::npos);
  EXPECT_EQ(html.find("CI <nightly>"), std::string::npos);
  EXPECT_NE(html.find("Check &lt;format&gt;"), std::string::npos);
  EXPECT_NE(html.find("id=\"slowest-chart\""), std::string::npos);
  EXPECT_NE(html.find("id=\"gpu-chart-0\""), std::string::npos);
  EXPECT_NE(html.find("BM_Gemm/4096"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  // Nothing is fetched: no external references at all.
  for (const char* needle : {"http://", "https://", "src=", "<link", "@import", "url("})
    EXPECT_EQ(html.find(needle), std::string::npos) << needle;
  // Well-formed enough for an XML parser (every tag closed, every text escaped).
  pugi::xml_document document;
  auto body = html.substr(html.find("<html"));
  // <meta> is a void element in HTML; close it for the XML check.
  for (std::size_t at = 0; (at = body.find("<meta", at)) != std::string::npos;) {
    auto end = body.find('>', at);
    body.insert(end, "/");
    at = end;
  }
  auto parsed = document.load_string(body.c_str());
  EXPECT_TRUE(parsed) << parsed.description() << " at " << parsed.offset;

  // Without samples the GPU section says so.
  auto plain = build_run_report(*store_, run_);
  EXPECT_NE(render_html(*plain).find("no GPU samples for this job"), std::string::npos);
}

TEST_F(ReportTest, StoredGpuSamplesBecomeSeriesAndCharts) {
  std::vector<store::GpuSampleRecord> samples;
  for (int gpu = 0; gpu < 2; ++gpu)
    for (int i = 0; i < 3 + gpu; ++i) {
      store::GpuSampleRecord s;
      s.job_id = gpu_job_;
      s.gpu_index = gpu;
      s.gpu_uuid = gpu == 0 ? "GPU-aaaa" : "GPU-bbbb";
      s.time = 1000 + 500 * i;
      s.memory_used_mib = 1024 * (i + 1);
      s.memory_total_mib = 143771;
      if (i != 1) s.utilization_pct = 50 + i;  // one reading missing
      s.power_w = 400;
      s.throttle_reasons = i == 2 ? 4 : 0;
      samples.push_back(s);
    }
  ASSERT_TRUE(store_->add_gpu_samples(samples));
  auto report = build_run_report(*store_, run_);
  ASSERT_TRUE(report) << report.error().to_string();
  const auto& job = (*report)["jobs"][0];
  EXPECT_EQ(job["gpu_sample_count"], 7);
  ASSERT_EQ(job["gpu_samples"].size(), 2u);
  const auto& first = job["gpu_samples"][0];
  EXPECT_EQ(first["gpu"], "0");
  EXPECT_EQ(first["uuid"], "GPU-aaaa");
  EXPECT_EQ(first["memory_total_mib"], 143771);
  ASSERT_EQ(first["points"].size(), 3u);
  EXPECT_EQ(first["points"][0]["t"], 1000);
  EXPECT_EQ(first["points"][0]["mem_mib"], 1024);
  EXPECT_TRUE(first["points"][1]["util"].is_null());
  EXPECT_EQ(first["points"][2]["throttle"], 4);
  EXPECT_EQ(job["gpu_samples"][1]["points"].size(), 4u);
  EXPECT_EQ((*report)["jobs"][1]["gpu_sample_count"], 0);

  auto html = render_html(*report);
  // One chart per GPU; a vertex per sample on the memory line, per reading on the utilization
  // line (the missing one is skipped, not drawn as 0).
  auto chart = [&](int n) {
    auto at = html.find(fmt::format("id=\"gpu-chart-{}\"", n));
    EXPECT_NE(at, std::string::npos) << n;
    return html.substr(at, html.find("</svg>", at) - at);
  };
  auto vertices = [](const std::string& svg, const std::string& cls) {
    auto at = svg.find("class=\"" + cls + "\"");
    auto points = svg.find("points=\"", at) + 8;
    auto text = svg.substr(points, svg.find('"', points) - points);
    return std::count(text.begin(), text.end(), ',');
  };
  auto gpu0 = chart(0), gpu1 = chart(1);
  EXPECT_NE(gpu0.find("data-points=\"3\""), std::string::npos) << gpu0;
  EXPECT_EQ(vertices(gpu0, "mem-line"), 3);
  EXPECT_EQ(vertices(gpu0, "util-line"), 2);
  EXPECT_NE(gpu1.find("data-points=\"4\""), std::string::npos) << gpu1;
  EXPECT_EQ(vertices(gpu1, "mem-line"), 4);
  EXPECT_EQ(html.find("id=\"gpu-chart-2\""), std::string::npos);
}

TEST_F(ReportTest, JunitOutputReadsBackWithKilnsOwnReader) {
  auto report = build_run_report(*store_, run_);
  ASSERT_TRUE(report);
  auto xml = render_junit(*report);
  auto parsed = parse_junit(xml, "kiln.xml");
  ASSERT_TRUE(parsed) << parsed.error().to_string() << "\n" << xml;
  ASSERT_EQ(parsed->cases.size(), 2u);
  EXPECT_EQ(parsed->cases[0].suite, "gpu tests");
  EXPECT_EQ(parsed->cases[0].classname, "gpu-tests");
  EXPECT_EQ(parsed->cases[0].name, "Run pytest");
  EXPECT_EQ(parsed->cases[0].status, "failed");
  EXPECT_EQ(parsed->cases[0].message, "step failed with exit code 1");
  EXPECT_DOUBLE_EQ(parsed->cases[0].seconds, 3.8);
  EXPECT_EQ(parsed->cases[1].name, "Check <format>");
  EXPECT_EQ(parsed->cases[1].status, "passed");
}

TEST(FormatNumberTest, AtMostThreeDecimalsUnitKept) {
  EXPECT_EQ(format_number(1.9189999999999998, "ms"), "1.919 ms");
  EXPECT_EQ(format_number(2.0), "2");
  EXPECT_EQ(format_number(0.5, "s"), "0.5 s");
  EXPECT_EQ(format_number(-0.0001), "-0.0001");
  EXPECT_EQ(format_number(0.000123456), "0.000123");
  EXPECT_EQ(format_number(-0.0000001), "-1e-07");
  EXPECT_EQ(format_number(1234567.8912), "1234567.891");
  EXPECT_EQ(format_number(-0.0004999), "-0.0005");
  EXPECT_EQ(format_number(87.25, "%"), "87.25%");
  EXPECT_EQ(format_number(3.5, "/s"), "3.5/s");
  EXPECT_EQ(format_value(Json(2.0849999999999998)), "2.085");
  EXPECT_EQ(format_value(Json(7)), "7");
  EXPECT_EQ(format_value(Json(nullptr)), "");
}

// Every renderer prints a measured double through format_number, never its 17 digits.
TEST_F(ReportTest, RenderersPrintNumbersForPeople) {
  auto report = build_run_report(*store_, run_);
  ASSERT_TRUE(report);
  auto& r = *report;
  EXPECT_EQ(r["benchmarks"][0]["value_text"], "1000 ns");
  r["benchmarks"][0]["value"] = 1.9189999999999998;
  r["jobs"][0]["gpu_summary"]["energy_wh"] = 2.0849999999999998;
  r["jobs"][0]["steps"][0]["duration_ms"] = 1919;
  for (const auto& out : {render_text(r), render_html(r), render_junit(r)}) {
    EXPECT_EQ(out.find("1.9189999"), std::string::npos) << out;
    EXPECT_EQ(out.find("2.0849999"), std::string::npos) << out;
  }
  EXPECT_NE(render_text(r).find("1.919"), std::string::npos);
  EXPECT_NE(render_text(r).find("energy_wh=2.085"), std::string::npos);
  EXPECT_NE(render_html(r).find(">1.919<"), std::string::npos);
  EXPECT_NE(render_junit(r).find("time=\"1.919\""), std::string::npos);
}

}  // namespace
}  // namespace kiln::report
