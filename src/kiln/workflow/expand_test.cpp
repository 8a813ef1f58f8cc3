// Expression-valued mappings (expand.h) and the other shapes GitHub accepts that older readers
// refused: `if:` as a YAML number, boolean defaults as expressions, `uses: ./`.
#include "kiln/workflow/expand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader_test_util.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::string_view k_expressions = R"yaml(on: push
env: ${{ fromJSON('{"A":"1"}') }}
jobs:
  build:
    runs-on: linux
    env: ${{ fromJSON(needs.setup.outputs.env) }}
    container: ${{ matrix.container }}
    services: ${{ fromJSON(inputs.services) }}
    steps:
      - uses: ./
        with: ${{ fromJSON(steps.s.outputs.opts) }}
        env: ${{ matrix.env }}
  plain:
    runs-on: linux
    container: ubuntu:24.04
    services:
      db:
        image: postgres:16
        credentials: ${{ secrets.REGISTRY_CREDS }}
    steps:
      - run: echo
)yaml";

TEST(ExpressionMappings, AreReadAsExpressions) {
  Workflow wf = load_ok(k_expressions);
  ASSERT_TRUE(wf.env.expression);
  EXPECT_EQ(wf.env.expression->value, R"(${{ fromJSON('{"A":"1"}') }})");
  const Job& build = wf.jobs[0];
  ASSERT_TRUE(build.env.expression);
  EXPECT_EQ(build.env.expression->where.line, 6);
  ASSERT_TRUE(build.container && build.container->expression);
  EXPECT_EQ(build.container->expression->value, "${{ matrix.container }}");
  ASSERT_TRUE(build.services_expression);
  ASSERT_TRUE(build.steps[0].with.expression);
  ASSERT_TRUE(build.steps[0].env.expression);
  EXPECT_EQ(build.steps[0].uses->value, "./");
  const Job& plain = wf.jobs[1];
  EXPECT_EQ(plain.container->image.value, "ubuntu:24.04");
  EXPECT_FALSE(plain.container->expression);
  ASSERT_EQ(plain.services.size(), 1u);
  ASSERT_TRUE(plain.services[0].second.credentials_expression);
}

TEST(ExpressionMappings, ABadExpressionIsLocated) {
  EXPECT_THAT(errors_of("on: push\njobs:\n  a:\n    runs-on: x\n    env: ${{ fromJSON( }}\n"
                        "    steps: [{run: echo}]\n"),
              ElementsAre(HasSubstr("wf.yml:5:")));
  // A plain string is still not a mapping.
  EXPECT_THAT(errors_of("on: push\njobs:\n  a:\n    runs-on: x\n    env: nope\n"
                        "    steps: [{run: echo}]\n"),
              ElementsAre("wf.yml:5:10: error: 'env' must be a mapping, not a string"));
}

expr::Context context_with(std::string_view json) {
  expr::Context context;
  context.contexts = expr::Value::parse(json);
  return context;
}

TEST(ExpandMapping, YieldsTheEntriesOfTheMapping) {
  TextMap map;
  map.expression = Text{"${{ fromJSON(needs.a.outputs.env) }}", {"wf.yml", 6, 10}};
  auto context = context_with(R"({"needs": {"a": {"outputs": {"env":
      "{\"CC\": \"gcc\", \"N\": 3, \"ON\": true, \"T\": \"${{ secrets.X }}\"}"}}}})");
  auto expanded = expand_mapping(map, context, "env");
  ASSERT_TRUE(expanded) << expanded.error().to_string();
  ASSERT_EQ(expanded->size(), 4u);
  EXPECT_EQ((*expanded)[0].first, "CC");
  EXPECT_EQ((*expanded)[0].second.value, "gcc");
  EXPECT_EQ((*expanded)[1].second.value, "3");
  EXPECT_EQ((*expanded)[2].second.value, "true");
  // A value holding `${{` is data: interpolating it gives it back as it was.
  auto value = expr::interpolate((*expanded)[3].second.value, context);
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, "${{ secrets.X }}");
}

TEST(ExpandMapping, AnythingButAMappingIsALocatedErrorWithItsType) {
  TextMap map;
  map.expression = Text{"${{ matrix.env }}", {"wf.yml", 9, 14}};
  auto expanded = expand_mapping(map, context_with(R"({"matrix": {"env": "A=1"}})"), "env");
  ASSERT_FALSE(expanded);
  EXPECT_EQ(expanded.error().to_string(),
            "wf.yml:9:14: error: 'env' must evaluate to a mapping, not a string ('A=1')");
  expanded = expand_mapping(map, context_with(R"({"matrix": {"env": [1]}})"), "env");
  ASSERT_FALSE(expanded);
  EXPECT_THAT(expanded.error().message, HasSubstr("not an array"));
  expanded = expand_mapping(map, context_with(R"({"matrix": {"env": {"A": {"B": 1}}}})"), "env");
  ASSERT_FALSE(expanded);
  EXPECT_THAT(expanded.error().message, HasSubstr("'env.A' must be a string"));
}

TEST(ResolveContainers, FromAStringAMappingOrNothing) {
  Workflow wf = load_ok(k_expressions);
  const Job& build = wf.jobs[0];
  auto context = context_with(R"({"matrix": {"container": {"image": "rocm/dev:6.2",
      "options": "--device /dev/kfd", "env": {"HIP": "1"},
      "credentials": {"username": "u", "password": "p"}}},
      "inputs": {"services": "{\"redis\": \"redis:7\", \"db\": {\"image\": \"pg\"}}"}})");
  auto resolved = resolve_containers(build, context);
  ASSERT_TRUE(resolved) << resolved.error().to_string();
  ASSERT_TRUE(*resolved && (*resolved)->container);
  const Container& container = *(*resolved)->container;
  EXPECT_EQ(container.image.value, "rocm/dev:6.2");
  EXPECT_EQ(container.options->value, "--device /dev/kfd");
  EXPECT_EQ(container.env[0].second.value, "1");
  EXPECT_EQ(container.credentials->password.value, "p");
  ASSERT_EQ((*resolved)->services.size(), 2u);
  EXPECT_EQ((*resolved)->services[1].first, "redis");  // in the mapping's (sorted) order
  EXPECT_EQ((*resolved)->services[1].second.image.value, "redis:7");

  context.contexts["matrix"]["container"] = "";
  resolved = resolve_containers(build, context);
  ASSERT_TRUE(resolved);
  EXPECT_FALSE((*resolved)->container);  // "" is no container, as on GitHub

  context.contexts["matrix"]["container"] = 3;
  resolved = resolve_containers(build, context);
  ASSERT_FALSE(resolved);
  EXPECT_EQ(resolved.error().to_string(),
            "wf.yml:7:16: error: 'container' must evaluate to an image name or a mapping, not "
            "a number");
}

TEST(ResolveContainers, CredentialsExpression) {
  Workflow wf = load_ok(k_expressions);
  auto resolved = resolve_containers(
      wf.jobs[1], context_with(R"({"secrets": {"REGISTRY_CREDS": {"username": "u",
          "password": "p"}}})"));
  ASSERT_TRUE(resolved) << resolved.error().to_string();
  EXPECT_EQ((*resolved)->services[0].second.credentials->username.value, "u");
  resolved =
      resolve_containers(wf.jobs[1], context_with(R"({"secrets": {"REGISTRY_CREDS": "u:p"}})"));
  ASSERT_FALSE(resolved);
  EXPECT_THAT(resolved.error().message, HasSubstr("'username' and 'password', not a string"));
  // Nothing written as an expression: nothing to resolve.
  Workflow plain = load_ok(
      "on: push\njobs:\n  a:\n    runs-on: x\n    container: u:1\n"
      "    steps: [{run: echo}]\n");
  auto none = resolve_containers(plain.jobs[0], {});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST(Condition, AYamlNumberIsCoercedWithGitHubsTruthiness) {
  std::string yaml = "on: push\njobs:\n";
  const char* values[] = {"0", "1", "-1", "0xf", "1.5", "0.0", ".inf", ".nan", "-.inf", "'0'"};
  for (int i = 0; i < 10; ++i)
    yaml += fmt::format("  j{}:\n    if: {}\n    runs-on: x\n    steps: [{{run: echo}}]\n", i,
                        values[i]);
  Workflow wf = load_ok(yaml);
  std::vector<std::string> conditions;
  for (const Job& job : wf.jobs) conditions.push_back(job.if_condition->value);
  // A quoted '0' is a string: the expression `0`, evaluated as GitHub does when the job runs.
  EXPECT_THAT(conditions, ElementsAre("false", "true", "true", "true", "true", "false", "true",
                                      "false", "true", "0"));
}

TEST(Inputs, ABooleanDefaultMayBeAnExpression) {
  Workflow wf = load_ok(R"yaml(on:
  workflow_dispatch:
    inputs:
      fast: {type: boolean, default: "${{ github.event_name == 'schedule' }}"}
  workflow_call:
    inputs:
      fast: {type: boolean, default: "${{ github.ref == 'refs/heads/main' }}"}
jobs:
  a: {runs-on: x, steps: [{run: echo}]}
)yaml");
  EXPECT_EQ(wf.on[0].inputs[0].default_value->value, "${{ github.event_name == 'schedule' }}");
  EXPECT_THAT(errors_of("on:\n  workflow_dispatch:\n    inputs:\n      f: {type: boolean, "
                        "default: maybe}\njobs:\n  a: {runs-on: x, steps: [{run: echo}]}\n"),
              ElementsAre(HasSubstr("must be true or false, not 'maybe'")));
}

TEST(Uses, TheRepositoryRootAction) {
  EXPECT_THAT(errors_of("on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{uses: ./}]\n"),
              IsEmpty());
}

}  // namespace
}  // namespace kiln::workflow
