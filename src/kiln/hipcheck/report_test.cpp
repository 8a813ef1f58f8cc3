#include "kiln/hipcheck/report.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "kiln/hipcheck/baseline.h"

namespace kiln::hipcheck {
namespace {

Report sample() {
  return scan_sources({{"src/k.cu",
                        "#include <cuda_runtime.h>\ncudaMalloc(&p, 1);\ncuCtxAttach(0);\n"
                        "int lane = threadIdx.x & 31;\n"},
                       {"src/clean.cpp", "int main() { return 0; }\n"},
                       {"odd name.cu", "cudaFree(p);\n"}},
                      2);
}

TEST(FailOn, IsALadder) {
  Finding convertible, unsupported, hazard;
  unsupported.category = Category::unsupported;
  hazard.category = Category::hazard;
  EXPECT_FALSE(fails_on(unsupported, FailOn::none));
  EXPECT_TRUE(fails_on(unsupported, FailOn::unsupported));
  EXPECT_FALSE(fails_on(hazard, FailOn::unsupported));
  EXPECT_TRUE(fails_on(hazard, FailOn::hazard));
  EXPECT_TRUE(fails_on(unsupported, FailOn::hazard));
  EXPECT_FALSE(fails_on(convertible, FailOn::hazard));
  EXPECT_TRUE(fails_on(convertible, FailOn::any));
  EXPECT_EQ(parse_fail_on("hazard"), FailOn::hazard);
  EXPECT_EQ(parse_fail_on("all"), std::nullopt);
}

TEST(Report, SummaryCounts) {
  Report r = sample();
  EXPECT_EQ(r.summary.files, 3u);
  EXPECT_EQ(r.summary.references, 4u);
  EXPECT_EQ(r.summary.convertible, 3u);
  EXPECT_EQ(r.summary.unsupported, 1u);
  EXPECT_EQ(r.summary.hazards, 1u);
  EXPECT_EQ(r.summary.code_lines, 6u);
  EXPECT_EQ(exit_code(r, FailOn::none), 0);
  EXPECT_EQ(exit_code(r, FailOn::unsupported), 1);
}

TEST(Report, TextHasFindingsPerFileCountsAndSummary) {
  std::string text = format_text(sample(), {FailOn::unsupported, false, "/w"});
  EXPECT_NE(
      text.find("src/k.cu:2:1: convertible: cudaMalloc (CUDA Runtime) -> hipMalloc [cuda-api]\n"),
      std::string::npos);
  EXPECT_NE(text.find("src/k.cu:4:26: hazard: lane index computed with & 31"), std::string::npos);
  EXPECT_NE(
      text.find(
          "  src/k.cu: 3 references (2 convertible, 1 unsupported), 1 hazard, 4 lines of code\n"),
      std::string::npos);
  EXPECT_EQ(text.find("src/clean.cpp"), std::string::npos);
  EXPECT_NE(text.find("hipcheck: 3 files, 6 lines of code: 4 references (3 convertible, 1 "
                      "unsupported), 1 hazard\n"),
            std::string::npos);
  EXPECT_NE(text.find("hipcheck: 1 finding fails with --fail-on unsupported: FAILED\n"),
            std::string::npos);
}

TEST(Report, TextHidesBaselinedFindings) {
  Report r = sample();
  auto baseline = Baseline::parse(baseline_json(r), "b.json");
  ASSERT_TRUE(baseline);
  baseline->apply(r);
  std::string text = format_text(r, {FailOn::any, true, "/w"});
  EXPECT_EQ(text.find("cudaMalloc"), std::string::npos);
  EXPECT_NE(text.find("hipcheck: 5 findings accepted by the baseline\n"), std::string::npos);
  EXPECT_NE(text.find("0 findings fail with --fail-on any: passed"), std::string::npos);
}

TEST(Report, JsonSchema) {
  auto doc = nlohmann::json::parse(format_json(sample(), {FailOn::any, false, "/w"}));
  EXPECT_EQ(doc["tool"], "kiln hipcheck");
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["failed"], true);
  EXPECT_EQ(doc["summary"]["references"], 4);
  EXPECT_EQ(doc["summary"]["lines_of_code"], 6);
  ASSERT_EQ(doc["files"].size(), 3u);
  const auto& k = doc["files"][2];
  EXPECT_EQ(k["path"], "src/k.cu");
  EXPECT_EQ(k["hazards"], 1);
  const auto& f = k["findings"][1];
  EXPECT_EQ(f["line"], 2);
  EXPECT_EQ(f["column"], 1);
  EXPECT_EQ(f["end_column"], 11);
  EXPECT_EQ(f["rule"], "cuda-api");
  EXPECT_EQ(f["category"], "convertible");
  EXPECT_EQ(f["name"], "cudaMalloc");
  EXPECT_EQ(f["hip"], "hipMalloc");
  EXPECT_EQ(f["status"], "convertible");
  EXPECT_EQ(f["library"], "CUDA Runtime");
  EXPECT_EQ(f["baselined"], false);
  EXPECT_EQ(f["fingerprint"].get<std::string>().size(), 16u);
}

TEST(Report, Sarif210) {
  Report r = sample();
  auto baseline = Baseline::parse(
      R"({"kiln_hipcheck_baseline": 1, "findings": [{"path": "odd name.cu", "fingerprint": ")" +
          fingerprint_hex(r.files[0].findings[0].fingerprint) + "\"}]}",
      "b.json");
  ASSERT_TRUE(baseline);
  baseline->apply(r);
  auto doc = nlohmann::json::parse(format_sarif(r, {FailOn::any, true, "/work dir"}));
  EXPECT_EQ(doc["version"], "2.1.0");
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "kiln hipcheck");
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///work%20dir/");
  EXPECT_EQ(run["columnKind"], "unicodeCodePoints");
  const auto& rules_json = run["tool"]["driver"]["rules"];
  ASSERT_EQ(rules_json.size(), rules().size());
  const auto& results = run["results"];
  ASSERT_EQ(results.size(), 5u);
  for (const auto& res : results)
    EXPECT_EQ(rules_json[res["ruleIndex"].get<std::size_t>()]["id"], res["ruleId"]);
  const auto& first = results[0];
  EXPECT_EQ(first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "odd%20name.cu");
  EXPECT_EQ(first["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(first["baselineState"], "unchanged");
  EXPECT_EQ(first["suppressions"][0]["kind"], "external");
  const auto& unsupported = results[3];
  EXPECT_EQ(unsupported["ruleId"], "cuda-api");
  EXPECT_EQ(unsupported["level"], "error");
  EXPECT_EQ(unsupported["baselineState"], "new");
  EXPECT_EQ(unsupported["locations"][0]["physicalLocation"]["region"]["startLine"], 3);
  EXPECT_EQ(results[4]["level"], "warning");
  EXPECT_EQ(results[2]["level"], "note");
  EXPECT_FALSE(results[4].contains("suppressions"));
}

}  // namespace
}  // namespace kiln::hipcheck
