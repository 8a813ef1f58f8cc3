#include "kiln/engine/plan/workflow_call.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader.h"

namespace kiln::engine {
namespace {

using ::testing::HasSubstr;

workflow::Workflow load(std::string_view yaml) {
  auto loaded = workflow::load_workflow_text(yaml, "wf.yml");
  for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
  return loaded.workflow.value_or(workflow::Workflow{});
}

const workflow::Workflow& called() {
  static const workflow::Workflow wf = load(R"yaml(on:
  workflow_call:
    inputs:
      arch: {type: string, required: true}
      fast: {type: boolean, default: true}
      shards: {type: number}
      label: {type: string, default: "gpu-${{ github.event_name }}"}
    secrets:
      token: {}
    outputs:
      binary: {value: "${{ jobs.build.outputs.name }}-${{ jobs.build.result }}"}
env:
  LEVEL: called-${{ inputs.arch }}
jobs:
  build: {runs-on: x, steps: [{run: y}]}
)yaml");
  return wf;
}

workflow::Job caller(std::string_view with_and_secrets) {
  auto wf =
      load(fmt::format("on: push\njobs:\n  call:\n    uses: ./c.yml\n    concurrency: "
                       "gpu-${{{{ matrix.arch }}}}\n{}",
                       with_and_secrets));
  return wf.jobs.at(0);
}

expr::Context caller_context() {
  expr::Context context;
  context.contexts["github"] = {{"event_name", "push"}};
  context.contexts["secrets"] = {{"T", "s3"}, {"OTHER", "o"}, {"GITHUB_TOKEN", "gh"}};
  context.contexts["matrix"] = {{"arch", "sm_90"}};
  context.contexts["vars"] = expr::Value::object();
  return context;
}

TEST(WorkflowCall, TypedInputsDefaultsSecretsEnvAndConcurrency) {
  auto job = caller(
      "    with:\n      arch: ${{ matrix.arch }}\n      fast: false\n"
      "    secrets:\n      token: ${{ secrets.T }}\n");
  auto prepared = prepare_call(job, called(), caller_context(), {{"FROM_FILE", "f"}});
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  const auto& inputs = prepared->contexts["inputs"];
  EXPECT_EQ(inputs["arch"], "sm_90");
  EXPECT_EQ(inputs["fast"], false);  // a boolean, not the text "false"
  EXPECT_EQ(inputs["shards"], 0);    // left out, no default: the type's zero
  EXPECT_EQ(inputs["label"], "gpu-push");
  // Only what is passed, and GITHUB_TOKEN.
  EXPECT_EQ(prepared->contexts["secrets"], expr::Value({{"token", "s3"}, {"GITHUB_TOKEN", "gh"}}));
  EXPECT_EQ(prepared->contexts["github"]["event_name"], "push");
  ASSERT_EQ(prepared->env.size(), 2u);
  EXPECT_EQ(prepared->env[1], std::make_pair(std::string("LEVEL"), std::string("called-sm_90")));
  EXPECT_EQ(prepared->concurrency_group, "gpu-sm_90");
}

TEST(WorkflowCall, InheritPassesEverySecret) {
  auto job = caller("    with: {arch: a}\n    secrets: inherit\n");
  auto prepared = prepare_call(job, called(), caller_context(), {});
  ASSERT_TRUE(prepared);
  EXPECT_EQ(prepared->contexts["secrets"], caller_context().contexts["secrets"]);
}

TEST(WorkflowCall, ErrorsAtTheCaller) {
  auto missing = prepare_call(caller("    with: {fast: true}\n"), called(), caller_context(), {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where.to_string(), "wf.yml:4:11");
  EXPECT_THAT(missing.error().message, HasSubstr("requires input 'arch'"));
  auto typed = prepare_call(caller("    with:\n      arch: a\n      shards: ${{ matrix.arch }}\n"),
                            called(), caller_context(), {});
  ASSERT_FALSE(typed);
  EXPECT_EQ(typed.error().where.to_string(), "wf.yml:8:15");
  EXPECT_THAT(typed.error().message, HasSubstr("input 'shards' is a number"));
}

TEST(WorkflowCall, OutputsFromTheCalledJobs) {
  std::vector<std::string> warnings;
  expr::Value jobs = {{"build", {{"result", "success"}, {"outputs", {{"name", "bin"}}}}}};
  auto outputs = evaluate_call_outputs(*called().find_trigger("workflow_call"), caller_context(),
                                       jobs, warnings);
  EXPECT_EQ(outputs["binary"], "bin-success");
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace kiln::engine
