#include "kiln/hipcheck/baseline.h"

#include <gtest/gtest.h>

namespace kiln::hipcheck {
namespace {

Report project(const std::string& a) {
  return scan_sources({{"a.cu", a}, {"b.cu", "__syncwarp();\n"}}, 1);
}

TEST(Baseline, RoundTripAcceptsEverything) {
  Report report = project("cudaMalloc(&p, 1);\ncudaFree(p);\n");
  auto baseline = Baseline::parse(baseline_json(report), "base.json");
  ASSERT_TRUE(baseline) << baseline.error().to_string();
  EXPECT_EQ(baseline->size(), 3u);
  baseline->apply(report);
  EXPECT_EQ(report.summary.baselined, 3u);
  EXPECT_EQ(exit_code(report, FailOn::any), 0);
}

TEST(Baseline, OnlyNewFindingsFailAndMovedLinesStayAccepted) {
  Report before = project("cudaMalloc(&p, 1);\ncudaFree(p);\n");
  auto baseline = Baseline::parse(baseline_json(before), "base.json");
  ASSERT_TRUE(baseline);
  // Lines moved, one identical line duplicated, one new use.
  Report after =
      project("// moved\n\ncudaMalloc(&p, 1);\ncudaFree(p);\ncudaFree(p);\ncudaMemset(p, 0, 1);\n");
  baseline->apply(after);
  std::vector<std::pair<int, bool>> state;
  for (const Finding& f : after.files[0].findings) state.emplace_back(f.line, f.baselined);
  EXPECT_EQ(state,
            (std::vector<std::pair<int, bool>>{{3, true}, {4, true}, {5, false}, {6, false}}));
  EXPECT_EQ(after.summary.baselined, 3u);
  EXPECT_EQ(exit_code(after, FailOn::any), 1);
  EXPECT_EQ(exit_code(after, FailOn::unsupported), 0);
  EXPECT_EQ(exit_code(after, FailOn::hazard), 0);  // b.cu's hazard is in the baseline
}

TEST(Baseline, BadFilesAreOneLineErrors) {
  auto expect_error = [](std::string_view text, std::string_view message) {
    auto b = Baseline::parse(text, "base.json");
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().exit_code(), 2);
    EXPECT_EQ(b.error().to_string(), fmt::format("base.json: error: {}", message));
  };
  expect_error("{", "not a valid JSON document (expected a hipcheck baseline)");
  expect_error("[]", "not a hipcheck baseline (no \"kiln_hipcheck_baseline\" key)");
  expect_error(R"({"kiln_hipcheck_baseline": 2, "findings": []})",
               "unsupported baseline version (expected 1)");
  expect_error(R"({"kiln_hipcheck_baseline": 1})", "\"findings\" must be an array");
  expect_error(R"({"kiln_hipcheck_baseline": 1, "findings": [{"path": "a.cu"}]})",
               "findings[0] needs string \"path\" and \"fingerprint\"");
  expect_error(
      R"({"kiln_hipcheck_baseline": 1, "findings": [{"path": "a.cu", "fingerprint": "xyz"}]})",
      "findings[0]: \"fingerprint\" must be 16 hex digits");
  auto missing = Baseline::load("/nonexistent/kiln/base.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().to_string(),
            "/nonexistent/kiln/base.json: error: cannot read the baseline file");
}

}  // namespace
}  // namespace kiln::hipcheck
