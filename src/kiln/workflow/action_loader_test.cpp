#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/workflow/action.h"

namespace kiln::workflow {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> errors_of(std::string_view yaml) {
  auto result = load_action_text(yaml, "action.yml");
  std::vector<std::string> out;
  for (const auto& d : result.diagnostics) out.push_back(d.to_string());
  EXPECT_EQ(result.action.has_value(), !has_errors(result.diagnostics));
  return out;
}

TEST(ActionLoader, Composite) {
  auto result = load_action_text(R"yaml(name: setup
description: sets up
inputs:
  cuda-version:
    description: which
    required: true
  Log Level:
    default: ${{ github.event_name }}
outputs:
  path:
    description: where
    value: ${{ steps.s.outputs.path }}
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      working-directory: sub
      env: {A: b}
      continue-on-error: true
      run: echo hi
    - uses: ./other
      with: {x: 1}
)yaml",
                                 "action.yml");
  ASSERT_TRUE(result.action) << (result.diagnostics.empty() ? ""
                                                            : result.diagnostics[0].to_string());
  const Action& action = *result.action;
  EXPECT_EQ(action.name, "setup");
  EXPECT_EQ(action.kind, ActionKind::composite);
  ASSERT_EQ(action.inputs.size(), 2u);
  EXPECT_TRUE(action.inputs[0].required);
  EXPECT_EQ(action.inputs[0].where.to_string(), "action.yml:4:3");
  EXPECT_EQ(action.inputs[1].default_value->value, "${{ github.event_name }}");
  // Input names ignore case; INPUT_ names are upper case with '_' for spaces.
  EXPECT_EQ(action.find_input("LOG LEVEL"), &action.inputs[1]);
  EXPECT_EQ(action.find_input("nope"), nullptr);
  EXPECT_EQ(input_variable("Log Level"), "LOG_LEVEL");
  ASSERT_EQ(action.outputs.size(), 1u);
  EXPECT_EQ(action.outputs[0].value->value, "${{ steps.s.outputs.path }}");
  ASSERT_EQ(action.steps.size(), 2u);
  EXPECT_EQ(action.steps[0].shell->value, "bash");
  EXPECT_EQ(action.steps[0].working_directory->value, "sub");
  EXPECT_EQ(action.steps[1].uses->value, "./other");
  EXPECT_EQ(action.steps[1].uses->where.to_string(), "action.yml:22:13");
}

TEST(ActionLoader, NodeAndDocker) {
  auto node = load_action_text(R"yaml(name: n
runs:
  using: node20
  main: dist/index.js
  pre: dist/pre.js
  pre-if: runner.os == 'Linux'
  post: dist/post.js
  post-if: success()
)yaml",
                               "action.yml");
  ASSERT_TRUE(node.action);
  EXPECT_EQ(node.action->kind, ActionKind::node);
  EXPECT_EQ(node.action->main->value, "dist/index.js");
  EXPECT_EQ(node.action->pre->value, "dist/pre.js");
  EXPECT_EQ(node.action->pre_if->value, "runner.os == 'Linux'");
  EXPECT_EQ(node.action->post_if->value, "success()");
  auto docker = load_action_text("runs:\n  using: docker\n  image: Dockerfile\n", "a.yml");
  ASSERT_TRUE(docker.action);
  EXPECT_EQ(docker.action->kind, ActionKind::docker);
  EXPECT_EQ(docker.action->image->value, "Dockerfile");
}

TEST(ActionLoader, ErrorsAtTheirPlace) {
  EXPECT_THAT(errors_of(R"yaml(name: x
inputs:
  a: {required: maybe}
  A: {}
outputs:
  o: {}
runs:
  using: composite
  steps:
    - run: echo no shell
    - timeout-minutes: 3
      run: echo
      shell: bash
)yaml"),
              ElementsAre("action.yml:3:17: error: 'required' must be true or false, not 'maybe'",
                          "action.yml:4:3: error: duplicate input 'A' (input names ignore case)",
                          "action.yml:6:3: error: output 'o' of a composite action needs a 'value'",
                          "action.yml:10:7: error: a 'run' step of a composite action needs a "
                          "'shell'",
                          "action.yml:11:7: warning: unknown key 'timeout-minutes' in a step "
                          "(ignored, as GitHub's runner ignores it)"));
  EXPECT_THAT(errors_of("name: x\nruns:\n  using: node99\n"),
              ElementsAre("action.yml:3:10: error: unknown 'runs.using' value 'node99' "
                          "(composite, node16, node20, node24 or docker)"));
  EXPECT_THAT(errors_of("name: x\nruns:\n  using: node20\n  image: x\n"),
              ElementsAre("action.yml:3:3: error: a node20 action needs 'runs.main'",
                          "action.yml:4:3: warning: unknown key 'image' in 'runs' (ignored, as "
                          "GitHub's runner ignores it)"));
  EXPECT_THAT(errors_of("name: x\n"), ElementsAre("action.yml:1:1: error: action has no 'runs' "
                                                  "(how it runs)"));
  EXPECT_THAT(errors_of("runs: [\n"), ElementsAre(::testing::StartsWith("action.yml:2:1: error: "
                                                                        "invalid YAML")));
}

// GitHub's runner ignores keys it does not know; so does kiln, with a warning at each.
TEST(ActionLoader, UnknownKeysAreWarnings) {
  auto result = load_action_text(R"yaml(name: x
permissions: {contents: read}
inputs:
  level: {type: string, default: low}
runs:
  using: node20
  main: index.js
)yaml",
                                 "action.yml");
  ASSERT_TRUE(result.action);
  EXPECT_EQ(result.action->inputs[0].default_value->value, "low");
  std::vector<std::string> messages;
  for (const auto& d : result.diagnostics) messages.push_back(d.to_string());
  EXPECT_THAT(messages,
              ElementsAre(::testing::StartsWith("action.yml:2:1: warning: unknown key "
                                                "'permissions' in action"),
                          ::testing::StartsWith("action.yml:4:11: warning: unknown key 'type' in "
                                                "input 'level'")));
}

TEST(ActionLoader, CompositeStepsCannotRunInParallel) {
  // GitHub's rule: a composite action may run as a background step, but not declare any.
  auto errors = errors_of(R"yaml(name: x
runs:
  using: composite
  steps:
    - run: serve
      shell: bash
      background: true
    - wait-all:
)yaml");
  EXPECT_THAT(errors, ::testing::Contains("action.yml:5:7: error: 'background' cannot be used in "
                                          "the steps of a composite action"));
  EXPECT_THAT(errors, ::testing::Contains("action.yml:8:7: error: 'wait-all' cannot be used in "
                                          "the steps of a composite action"));
}

TEST(ActionLoader, FindsActionYmlThenYaml) {
  auto dir = std::filesystem::temp_directory_path() / "kiln-action-loader-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(find_action_file(dir));
  std::ofstream(dir / "action.yaml") << "runs: {using: composite, steps: []}\n";
  EXPECT_EQ(find_action_file(dir), dir / "action.yaml");
  std::ofstream(dir / "action.yml") << "runs: {using: composite, steps: []}\n";
  EXPECT_EQ(find_action_file(dir), dir / "action.yml");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::workflow
