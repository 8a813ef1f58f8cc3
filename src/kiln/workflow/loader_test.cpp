#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "kiln/workflow/loader_test_util.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// --- the YAML itself -------------------------------------------------------------------------

TEST(LoaderSyntax, YamlErrorHasFileLineColumn) {
  // The unclosed `[` lets `push jobs` run on as one scalar; yaml-cpp notices at the `:`.
  EXPECT_THAT(errors_of("on: [push\njobs: {}\n"),
              ElementsAre("wf.yml:2:5: error: invalid YAML: end of sequence flow not found"));
  // A value kiln cannot read as one string (a comment follows it) stays a YAML error.
  EXPECT_THAT(errors_of("on: push\njobs: a: b  # note\n"),
              ElementsAre("wf.yml:2:8: error: invalid YAML: illegal map value (an unquoted "
                          "value cannot hold ': '; put the value in quotes)"));
  // Otherwise the rest of the line is read as a string, with a warning.
  EXPECT_THAT(errors_of("on: push\njobs: a: b\n"),
              ElementsAre(HasSubstr("wf.yml:2:7: warning: an unquoted value cannot contain ': '"),
                          "wf.yml:2:7: error: 'jobs' must be a mapping, not a string"));
}

TEST(LoaderSyntax, EmptyFileAndNonMapping) {
  EXPECT_THAT(errors_of(""), ElementsAre("wf.yml:1:1: error: workflow file is empty"));
  EXPECT_THAT(errors_of("# only a comment\n"),
              ElementsAre("wf.yml:1:1: error: workflow file is empty"));
  EXPECT_THAT(errors_of("- on\n- jobs\n"),
              ElementsAre("wf.yml:1:1: error: a workflow must be a mapping, not a list"));
}

TEST(LoaderSyntax, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "on: push\njobs: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  auto errors = errors_of(deep);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(errors[0].starts_with("wf.yml:2:")) << errors[0];
  EXPECT_NE(errors[0].find("invalid YAML"), std::string::npos) << errors[0];
}

// --- keys ------------------------------------------------------------------------------------

constexpr std::string_view k_job = R"yaml(on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: make
)yaml";

TEST(LoaderKeys, MinimalWorkflowLoads) { EXPECT_THAT(errors_of(k_job), IsEmpty()); }

TEST(LoaderKeys, UnknownKeyWithSuggestion) {
  EXPECT_THAT(errors_of(std::string("nmae: CI\n") + std::string(k_job)),
              ElementsAre("wf.yml:1:1: error: unknown key 'nmae' in workflow (did you mean "
                          "'name'?)"));
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  build:
    runs_on: linux
    runs-on: linux
    setps: []
    steps:
      - run: make
        working_directory: src
)yaml"),
              ElementsAre("wf.yml:4:5: error: unknown key 'runs_on' in job 'build' (did you "
                          "mean 'runs-on'?)",
                          "wf.yml:6:5: error: unknown key 'setps' in job 'build' (did you mean "
                          "'steps'?)",
                          "wf.yml:9:9: error: unknown key 'working_directory' in a step (did you "
                          "mean 'working-directory'?)"));
}

TEST(LoaderKeys, UnknownKeyWithoutSuggestion) {
  EXPECT_THAT(errors_of(std::string(k_job) + "frobnicate: 1\n"),
              ElementsAre("wf.yml:7:1: error: unknown key 'frobnicate' in workflow"));
}

TEST(LoaderKeys, DuplicateKeys) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  build:
    runs-on: linux
    runs-on: mac
    steps:
      - run: make
        env: {A: 1, A: 2}
)yaml"),
              ElementsAre("wf.yml:5:5: error: duplicate key 'runs-on' (first defined at line 4)",
                          "wf.yml:8:21: error: duplicate key 'A' (first defined at line 8)"));
  // The first value is the one kept.
  LoadResult result = load_workflow_text(R"yaml(on: push
jobs:
  a:
    runs-on: linux
    steps: [{run: x}]
  a:
    runs-on: mac
    steps: [{run: y}]
)yaml",
                                         "wf.yml");
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].to_string(),
            "wf.yml:6:3: error: duplicate key 'a' (first defined at line 3)");
}

TEST(LoaderKeys, WrongShapes) {
  EXPECT_THAT(errors_of(R"yaml(on: push
env: [A, B]
jobs:
  build:
    runs-on: linux
    name: {a: b}
    steps:
      run: make
)yaml"),
              ElementsAre("wf.yml:2:6: error: 'env' must be a mapping, not a list",
                          "wf.yml:6:11: error: 'name' must be a string, not a mapping",
                          "wf.yml:8:7: error: 'steps' must be a list, not a mapping"));
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run
)yaml"),
              ElementsAre("wf.yml:6:9: error: a step must be a mapping, not a string"));
}

TEST(LoaderKeys, NonScalarKeysAndListItems) {
  EXPECT_THAT(errors_of(R"yaml(on: push
env:
  ? [a, b]
  : c
jobs:
  a:
    runs-on: [x, [y]]
    needs: [{b: c}]
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:3:5: error: a key in 'env' must be a string, not a list",
                          "wf.yml:7:18: error: each item of 'runs-on' must be a string, not a list",
                          "wf.yml:8:13: error: each item of 'needs' must be a string, not a "
                          "mapping"));
}

// --- several errors --------------------------------------------------------------------------

TEST(LoaderErrors, SeveralErrorsInFileOrder) {
  auto errors = errors_of(R"yaml(name: CI
on: [push, pushh]
jobs:
  test:
    needs: nope
    runs-on: x
    steps:
      - run: a
        uses: b/c@d
  build:
    runs-on: x
    steps: []
)yaml");
  EXPECT_THAT(errors,
              ElementsAre("wf.yml:2:12: error: unknown event 'pushh' (did you mean 'push'?)",
                          "wf.yml:5:12: error: job 'test' needs 'nope', which does not exist",
                          "wf.yml:8:9: error: a step cannot have both 'run' and 'uses'",
                          "wf.yml:12:12: error: job 'build' has no steps"));
}

std::vector<std::string> errors_of_file(std::string_view yaml, const char* name) {
  std::vector<std::string> errors;
  for (const Diagnostic& d : load_workflow_text(yaml, name).diagnostics)
    errors.push_back(d.to_string());
  return errors;
}

// --- reference pipelines ---------------------------------------------------------------------

std::string read_reference(const char* name) {
  std::ifstream in(std::filesystem::path(KILN_SOURCE_DIR) / "tests/data/reference-workflows" /
                   name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(LoaderReference, RocmPipelineLoadsCleanly) {
  LoadResult result = load_workflow_file(
      std::filesystem::path(KILN_SOURCE_DIR) / "tests/data/reference-workflows/rocm-ci.yml",
      "rocm-ci.yml");
  for (const Diagnostic& d : result.diagnostics) ADD_FAILURE() << d.to_string();
  ASSERT_TRUE(result.workflow);
  const Workflow& wf = *result.workflow;
  EXPECT_EQ(wf.name->value, "ROCm hardware validation");
  EXPECT_EQ(wf.concurrency->group.value,
            "${{ github.workflow }}-${{ github.head_ref || github.run_id }}");
  EXPECT_EQ(wf.concurrency->cancel_in_progress->value, "true");
  const Trigger* pr = wf.find_trigger("pull_request");
  ASSERT_TRUE(pr && pr->filter.paths);
  EXPECT_EQ(pr->filter.paths->size(), 3u);
  ASSERT_EQ(wf.jobs.size(), 1u);
  const Job& job = wf.jobs[0];
  EXPECT_EQ(job.timeout_minutes->value, "60");
  EXPECT_EQ(job.runs_on.labels[1].value, "roc-gpu-mi200");
  EXPECT_EQ(job.container->image.value, "rocm/pytorch:rocm6.2.3-ubuntu22.04");
  EXPECT_EQ(job.steps.size(), 6u);
}

// The shared cuda-ci.yml is not valid YAML as written: line 39's unquoted `run:` value holds
// "with: ", which starts a mapping (PyYAML refuses it). Kiln must run the file unchanged, so the
// loader reads the rest of that line as one string and warns at the value.
TEST(LoaderReference, CudaPipelineLoadsWithAWarningForItsUnquotedValue) {
  std::string text = read_reference("cuda-ci.yml");
  ASSERT_FALSE(text.empty());
  LoadResult result = load_workflow_text(text, "cuda-ci.yml");
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].to_string(),
            "cuda-ci.yml:39:14: warning: an unquoted value cannot contain ': ' in YAML; kiln "
            "reads the rest of the line as one string (quote it to make the file valid YAML)");
  ASSERT_TRUE(result.workflow);
  const Workflow& wf = *result.workflow;
  EXPECT_EQ(wf.on.size(), 3u);
  ASSERT_EQ(wf.jobs.size(), 2u);
  EXPECT_EQ(
      wf.jobs[0].steps[5].run->value,
      R"(echo "job environment kept; attach with: kiln exec ${{ github.run_id }} ${{ github.job }}")");
  EXPECT_EQ(wf.jobs[0].container->options->value, "--gpus all --shm-size=2gb");
  EXPECT_EQ(wf.jobs[0].steps[4].if_condition->value, "always()");
  EXPECT_EQ(wf.jobs[1].needs[0].value, "gpu_test");
  EXPECT_EQ(wf.jobs[1].runs_on.labels[2].value, "gpu:2");
}

// A value that cannot be read as a string (a flow mapping after the colon) stays an error.
TEST(LoaderReference, OtherMapValueErrorsStayErrors) {
  EXPECT_THAT(errors_of_file("on: push\njobs:\n  a: b: c\n", "wf.yml"),
              testing::Contains(testing::HasSubstr("wf.yml:3:")));
}

}  // namespace
}  // namespace kiln::workflow
