#include "kiln/exec/sarif.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions_test_support.h"

namespace kiln::exec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::output_of;
using testing::RecordingContext;
using testing::TempDir;
using testing::write_file;

SarifResults read(const json& log, const fs::path& checkout = "/src/repo") {
  auto result = sarif_annotations(log, "scan.sarif", checkout);
  EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
  return result ? *result : SarifResults{};
}

json one_run(json results, json extra = json::object()) {
  json run = {{"tool", {{"driver", {{"name", "scanner"}}}}}, {"results", std::move(results)}};
  run.update(extra);
  return {{"version", "2.1.0"}, {"runs", json::array({run})}};
}

json at(std::string uri, json region, std::string base = "") {
  json artifact = {{"uri", std::move(uri)}};
  if (!base.empty()) artifact["uriBaseId"] = base;
  return json::array(
      {{{"physicalLocation", {{"artifactLocation", artifact}, {"region", std::move(region)}}}}});
}

TEST(Sarif, AResultIsAnAnnotationOnItsFileLineAndColumns) {
  auto read_log = read(one_run(json::array(
      {{{"ruleId", "cuda-api"},
        {"level", "error"},
        {"message", {{"text", "cudaMalloc has no HIP equivalent here"}}},
        {"locations",
         at("src/k.cu", {{"startLine", 12}, {"startColumn", 5}, {"endColumn", 15}})}}})));
  ASSERT_EQ(read_log.annotations.size(), 1u);
  const auto& note = read_log.annotations[0];
  EXPECT_EQ(note.level, AnnotationLevel::error);
  EXPECT_EQ(note.file, "src/k.cu");
  EXPECT_EQ(note.line, 12);
  EXPECT_EQ(note.end_line, 12);
  EXPECT_EQ(note.column, 5);
  EXPECT_EQ(note.end_column, 14);  // SARIF's endColumn is one past the region
  EXPECT_EQ(note.title, "cuda-api");
  EXPECT_EQ(note.message, "cudaMalloc has no HIP equivalent here");
  EXPECT_EQ(read_log.tools, std::vector<std::string>{"scanner"});
}

TEST(Sarif, PathsResolveThroughUriBaseIdsAndFileUris) {
  json bases = {{"SRCROOT", {{"uri", "file:///src/repo/"}}},
                {"SUB", {{"uri", "lib%20x/"}, {"uriBaseId", "SRCROOT"}}},
                {"ELSEWHERE", {{"uri", "file:///opt/other/"}}}};
  auto read_log = read(one_run(
      json::array(
          {{{"message", {{"text", "a"}}}, {"locations", at("a.cu", {{"startLine", 1}}, "SRCROOT")}},
           {{"message", {{"text", "b"}}}, {"locations", at("b.cu", {{"startLine", 2}}, "SUB")}},
           {{"message", {{"text", "c"}}},
            {"locations", at("file:///src/repo/deep/c.cu", {{"startLine", 3}})}},
           {{"message", {{"text", "d"}}},
            {"locations", at("d.cu", {{"startLine", 4}}, "ELSEWHERE")}},
           {{"message", {{"text", "e"}}}, {"locations", at("https://x/e.cu", {{"startLine", 5}})}},
           {{"message", {{"text", "f"}}}, {"locations", at("../f.cu", {{"startLine", 6}})}}}),
      {{"originalUriBaseIds", bases}}));
  ASSERT_EQ(read_log.annotations.size(), 6u);
  EXPECT_EQ(read_log.annotations[0].file, "a.cu");
  EXPECT_EQ(read_log.annotations[1].file, "lib x/b.cu");
  EXPECT_EQ(read_log.annotations[2].file, "deep/c.cu");
  // Outside the checkout, or no file at all: kept, without a file (the check run lists them).
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(read_log.annotations[i].file, "") << i;
    EXPECT_EQ(read_log.annotations[i].line, 0) << i;
  }
  EXPECT_EQ(read_log.outside, 3u);
}

TEST(Sarif, ArtifactIndexesAndPointRegionsAsClangWritesThem) {
  // clang's analyzer: endColumn equal to startColumn for a point; a location may give only the
  // index of the run's artifact.
  json run = {
      {"artifacts", {{{"location", {{"index", 0}, {"uri", "file:///src/repo/a.cpp"}}}}}},
      {"tool", {{"driver", {{"name", "clang"}}}}},
      {"results",
       {{{"message", {{"text", "garbage value"}}},
         {"ruleId", "core.UndefinedBinaryOperatorResult"},
         {"locations",
          {{{"physicalLocation",
             {{"artifactLocation", {{"index", 0}}},
              {"region", {{"startLine", 3}, {"startColumn", 20}, {"endColumn", 20}}}}}}}}}}}};
  auto read_log = read({{"version", "2.1.0"}, {"runs", json::array({run})}});
  ASSERT_EQ(read_log.annotations.size(), 1u);
  EXPECT_EQ(read_log.annotations[0].file, "a.cpp");
  EXPECT_EQ(read_log.annotations[0].line, 3);
  EXPECT_EQ(read_log.annotations[0].column, 20);
  EXPECT_EQ(read_log.annotations[0].end_column, 20);
}

TEST(Sarif, LevelAndMessageComeFromTheRuleWhenTheResultHasNone) {
  json rule0 = {{"id", "r0"},
                {"defaultConfiguration", {{"level", "note"}}},
                {"shortDescription", {{"text", "rule zero"}}}};
  json rule1 = {{"id", "r1"},
                {"messageStrings", {{"default", {{"text", "{0} is not {1} ({{literal}})"}}}}}};
  json rules = json::array({rule0, rule1});
  json run = {{"tool", {{"driver", {{"name", "t"}, {"rules", rules}}}}},
              {"results",
               json::array({{{"ruleIndex", 0}, {"locations", at("x.c", {{"startLine", 1}})}},
                            {{"ruleId", "r1"},
                             {"message", {{"id", "default"}, {"arguments", {"cudaFoo", "ported"}}}},
                             {"locations", at("x.c", json::object())}},
                            {{"ruleId", "unknown"}, {"message", {{"text", "plain"}}}}})}};
  auto read_log = read({{"version", "2.1.0"}, {"runs", json::array({run})}});
  ASSERT_EQ(read_log.annotations.size(), 3u);
  EXPECT_EQ(read_log.annotations[0].level, AnnotationLevel::notice);
  EXPECT_EQ(read_log.annotations[0].message, "rule zero");
  EXPECT_EQ(read_log.annotations[0].title, "r0");
  EXPECT_EQ(read_log.annotations[1].level, AnnotationLevel::warning);  // SARIF's default
  EXPECT_EQ(read_log.annotations[1].message, "cudaFoo is not ported ({literal})");
  EXPECT_EQ(read_log.annotations[1].line, 1);  // no region: the file's first line
  EXPECT_EQ(read_log.annotations[2].message, "plain");
}

TEST(Sarif, SuppressedAbsentAndPassingResultsAreSkipped) {
  auto read_log = read(one_run(json::array(
      {{{"message", {{"text", "kept"}}}},
       {{"message", {{"text", "suppressed"}}}, {"suppressions", {{{"kind", "external"}}}}},
       {{"message", {{"text", "rejected suppression"}}},
        {"suppressions", {{{"kind", "inSource"}, {"status", "rejected"}}}}},
       {{"message", {{"text", "gone"}}}, {"baselineState", "absent"}},
       {{"message", {{"text", "unchanged"}}}, {"baselineState", "unchanged"}},
       {{"message", {{"text", "passed"}}}, {"kind", "pass"}}})));
  std::vector<std::string> messages;
  for (const auto& note : read_log.annotations) messages.push_back(note.message);
  EXPECT_EQ(messages, (std::vector<std::string>{"kept", "rejected suppression", "unchanged"}));
  EXPECT_EQ(read_log.results, 6u);
  EXPECT_EQ(read_log.suppressed, 3u);
}

TEST(Sarif, WhatIsNotASarifLogIsSaidWithItsPlace) {
  auto error_of = [](const json& log) {
    auto result = sarif_annotations(log, "scan.sarif", "/r");
    return result ? std::string("accepted") : result.error().message;
  };
  EXPECT_EQ(error_of(json::array()),
            "scan.sarif: not a SARIF 2.1.0 log: the top level is not an object");
  EXPECT_EQ(error_of({{"version", "2.1.0"}}),
            "scan.sarif: not a SARIF 2.1.0 log: \"runs\" is not an array");
  EXPECT_EQ(error_of({{"version", "2.0.0"}, {"runs", json::array()}}),
            "scan.sarif: SARIF version 2.0.0; kiln reads version 2.1.0");
  EXPECT_EQ(error_of({{"runs", {{{"results", {1}}}}}}),
            "scan.sarif: not a SARIF 2.1.0 log: runs[0].results[0] is not an object");
  EXPECT_EQ(error_of({{"runs", {{{"results", {{{"locations", "x"}}}}}}}}),
            "scan.sarif: not a SARIF 2.1.0 log: runs[0].results[0].locations is not an array");
}

class UploadSarif : public ::testing::Test {
 protected:
  void SetUp() override { recording_ = std::make_unique<RecordingContext>(temp_.path()); }
  ActionResult run(const std::map<std::string, std::string>& with) {
    auto result =
        run_builtin_action("github/codeql-action/upload-sarif@v3", with, recording_->context);
    EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
    return result ? *result : ActionResult{};
  }
  fs::path ws() const { return recording_->context.workspace; }

  TempDir temp_;
  std::unique_ptr<RecordingContext> recording_;
};

TEST_F(UploadSarif, ReadsAFileOrEveryLogInADirectory) {
  std::string log = one_run(json::array({{{"message", {{"text", "m"}}},
                                          {"locations", at("src/a.cu", {{"startLine", 3}})}}}))
                        .dump();
  write_file(ws() / "out" / "one.sarif", log);
  write_file(ws() / "out" / "deeper" / "two.sarif", log);
  write_file(ws() / "out" / "notes.txt", "not read");
  auto file = run({{"sarif_file", "out/one.sarif"}});
  EXPECT_TRUE(file.success) << file.error;
  ASSERT_EQ(file.annotations.size(), 1u);
  EXPECT_EQ(file.annotations[0].file, "src/a.cu");
  EXPECT_NE(output_of(file, "sarif-id"), "<unset>");
  EXPECT_TRUE(recording_->logged("out/one.sarif: 1 result from scanner")) << recording_->log_text();

  auto dir = run({{"sarif_file", "out"}, {"category", "hip"}});
  EXPECT_TRUE(dir.success) << dir.error;
  EXPECT_EQ(dir.annotations.size(), 2u);
  EXPECT_FALSE(recording_->logged("Unexpected input")) << recording_->log_text();
}

TEST_F(UploadSarif, CheckoutPathIsWhatFilesAreRelativeTo) {
  write_file(ws() / "scan.sarif",
             one_run(json::array({{{"message", {{"text", "m"}}},
                                   {"locations", at("file://" + (ws() / "sub/src/a.cu").string(),
                                                    {{"startLine", 3}})}}}))
                 .dump());
  auto result = run({{"sarif_file", "scan.sarif"}, {"checkout_path", "sub"}});
  ASSERT_EQ(result.annotations.size(), 1u);
  EXPECT_EQ(result.annotations[0].file, "src/a.cu");
}

TEST_F(UploadSarif, MissingOrBrokenLogsFailTheStepWithTheReason) {
  auto missing = run({{"sarif_file", "nothing.sarif"}});
  EXPECT_FALSE(missing.success);
  EXPECT_EQ(missing.error, "Path does not exist: nothing.sarif");
  auto defaulted = run({});
  EXPECT_EQ(defaulted.error, "Path does not exist: ../results");
  fs::create_directories(ws() / "empty");
  EXPECT_EQ(run({{"sarif_file", "empty"}}).error, "No SARIF files found to upload in \"empty\".");

  write_file(ws() / "broken.sarif", "{\n  \"runs\": [\n    {\"results\": [1,]}\n  ]\n}\n");
  auto broken = run({{"sarif_file", "broken.sarif"}});
  EXPECT_FALSE(broken.success);
  EXPECT_NE(broken.error.find((ws() / "broken.sarif").string() + ":3:"), std::string::npos)
      << broken.error;
  EXPECT_NE(broken.error.find("not valid JSON"), std::string::npos) << broken.error;

  write_file(ws() / "odd.sarif", "{\"runs\": {}}");
  EXPECT_NE(run({{"sarif_file", "odd.sarif"}}).error.find("\"runs\" is not an array"),
            std::string::npos);
  run({{"sarif_file", "odd.sarif"}, {"sarif-file", "typo"}});
  EXPECT_TRUE(recording_->logged("Unexpected input(s) 'sarif-file'")) << recording_->log_text();
}

}  // namespace
}  // namespace kiln::exec
