#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader_test_util.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --- the typed model -------------------------------------------------------------------------

constexpr std::string_view k_full = R"yaml(name: Full
run-name: Build ${{ github.ref }}
on:
  push:
    branches: [main, 'release/**']
    tags: v*
    paths-ignore: [docs/**]
  pull_request:
    types: [opened, synchronize]
    branches-ignore: [wip/*]
  workflow_dispatch:
    inputs:
      level:
        description: How hard
        required: true
        default: medium
        type: choice
        options: [low, medium, high]
      dry:
        type: boolean
        default: false
  schedule:
    - cron: '30 2 * * 1-5'
env:
  GLOBAL: 1
  FLAG: true
defaults:
  run:
    shell: bash
    working-directory: src
concurrency: ci-${{ github.ref }}
permissions:
  contents: read
jobs:
  build:
    name: Build ${{ matrix.os }}
    runs-on: [self-hosted, '${{ matrix.os }}', 'gpu:2']
    timeout-minutes: 30
    continue-on-error: ${{ matrix.experimental }}
    environment: {name: staging, url: 'https://example.com'}
    outputs:
      version: ${{ steps.ver.outputs.v }}
    env:
      CC: gcc
    defaults:
      run:
        shell: sh
    strategy:
      fail-fast: false
      max-parallel: 2
      matrix:
        os: [linux, mac]
        python: [3.10, '3.11', 3]
        experimental: [false]
        include:
          - os: linux
            cuda: 12.4
        exclude:
          - {os: mac, python: 3}
    concurrency:
      group: build-${{ matrix.os }}
      cancel-in-progress: true
    container:
      image: rocm/pytorch:latest
      options: --device /dev/kfd
      env: {HIP: 1}
      ports: [8080, '9090:90']
      volumes: [/data:/data]
      credentials: {username: u, password: '${{ secrets.P }}'}
    services:
      redis:
        image: redis:7
        ports: [6379]
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - id: ver
        name: Version
        if: github.event_name == 'push'
        run: echo "v=1" >> "$GITHUB_OUTPUT"
        shell: bash
        working-directory: tools
        env: {X: y}
        continue-on-error: true
        timeout-minutes: 5
  test:
    needs: build
    if: ${{ success() }}
    runs-on: {group: gpus, labels: gpu}
    steps:
      - run: make test
)yaml";

TEST(LoaderModel, FullWorkflowRoundTrips) {
  Workflow wf = load_ok(k_full, {"wf.yml:90:22: warning: runs-on group 'gpus' is not used: this "
                                 "host has no runner groups; the job runs where its labels are "
                                 "served"});
  EXPECT_EQ(wf.path, "wf.yml");
  ASSERT_TRUE(wf.name);
  EXPECT_EQ(wf.name->value, "Full");
  EXPECT_EQ(wf.name->where.to_string(), "wf.yml:1:7");
  EXPECT_EQ(wf.run_name->value, "Build ${{ github.ref }}");

  ASSERT_EQ(wf.on.size(), 4u);
  const Trigger* push = wf.find_trigger("push");
  ASSERT_TRUE(push);
  ASSERT_TRUE(push->filter.branches);
  ASSERT_EQ(push->filter.branches->size(), 2u);
  EXPECT_EQ((*push->filter.branches)[1].value, "release/**");
  EXPECT_EQ((*push->filter.branches)[1].where.to_string(), "wf.yml:5:22");
  ASSERT_TRUE(push->filter.tags);
  EXPECT_EQ((*push->filter.tags)[0].value, "v*");
  EXPECT_EQ((*push->filter.paths_ignore)[0].value, "docs/**");
  EXPECT_FALSE(push->filter.paths);
  EXPECT_FALSE(push->filter.branches_ignore);
  EXPECT_EQ(push->where.to_string(), "wf.yml:4:3");

  const Trigger* pr = wf.find_trigger("pull_request");
  ASSERT_TRUE(pr);
  ASSERT_EQ(pr->filter.types.size(), 2u);
  EXPECT_EQ(pr->filter.types[1].value, "synchronize");
  EXPECT_EQ((*pr->filter.branches_ignore)[0].value, "wip/*");

  const Trigger* dispatch = wf.find_trigger("workflow_dispatch");
  ASSERT_TRUE(dispatch);
  ASSERT_EQ(dispatch->inputs.size(), 2u);
  const InputSpec& level = dispatch->inputs[0];
  EXPECT_EQ(level.name, "level");
  EXPECT_EQ(level.description, "How hard");
  EXPECT_TRUE(level.required);
  EXPECT_EQ(level.type, "choice");
  EXPECT_EQ(level.default_value->value, "medium");
  EXPECT_THAT(level.options, ElementsAre("low", "medium", "high"));
  EXPECT_EQ(level.where.to_string(), "wf.yml:13:7");
  EXPECT_EQ(dispatch->inputs[1].type, "boolean");
  EXPECT_FALSE(dispatch->inputs[1].required);
  EXPECT_EQ(dispatch->inputs[1].default_value->value, "false");

  const Trigger* schedule = wf.find_trigger("schedule");
  ASSERT_TRUE(schedule);
  ASSERT_EQ(schedule->cron.size(), 1u);
  EXPECT_EQ(schedule->cron[0].value, "30 2 * * 1-5");
  EXPECT_EQ(schedule->cron[0].where.to_string(), "wf.yml:23:13");
  EXPECT_EQ(wf.find_trigger("release"), nullptr);

  ASSERT_EQ(wf.env.size(), 2u);
  EXPECT_EQ(wf.env[0].first, "GLOBAL");
  EXPECT_EQ(wf.env[0].second.value, "1");
  EXPECT_EQ(wf.env[1].second.value, "true");  // kept as written
  EXPECT_EQ(wf.defaults.shell->value, "bash");
  EXPECT_EQ(wf.defaults.working_directory->value, "src");
  ASSERT_TRUE(wf.concurrency);
  EXPECT_EQ(wf.concurrency->group.value, "ci-${{ github.ref }}");
  EXPECT_FALSE(wf.concurrency->cancel_in_progress);

  ASSERT_EQ(wf.jobs.size(), 2u);
  const Job* build = wf.find_job("build");
  ASSERT_TRUE(build);
  EXPECT_EQ(build->where.to_string(), "wf.yml:35:3");
  EXPECT_EQ(build->name->value, "Build ${{ matrix.os }}");
  ASSERT_EQ(build->runs_on.labels.size(), 3u);
  EXPECT_EQ(build->runs_on.labels[1].value, "${{ matrix.os }}");
  EXPECT_EQ(build->runs_on.labels[2].value, "gpu:2");
  EXPECT_FALSE(build->runs_on.group);
  EXPECT_EQ(build->timeout_minutes->value, "30");
  EXPECT_EQ(build->continue_on_error->value, "${{ matrix.experimental }}");
  EXPECT_EQ(build->environment->value, "staging");
  ASSERT_EQ(build->outputs.size(), 1u);
  EXPECT_EQ(build->outputs[0].first, "version");
  EXPECT_EQ(build->env[0].second.value, "gcc");
  EXPECT_EQ(build->defaults.shell->value, "sh");
  EXPECT_FALSE(build->defaults.working_directory);
  EXPECT_TRUE(build->needs.empty());

  ASSERT_TRUE(build->strategy);
  EXPECT_EQ(build->strategy->fail_fast->value, "false");
  EXPECT_EQ(build->strategy->max_parallel->value, "2");
  ASSERT_TRUE(build->strategy->matrix);
  const auto& matrix = *build->strategy->matrix;
  EXPECT_EQ(build->strategy->matrix_where.to_string(), "wf.yml:52:9");  // its first key
  EXPECT_EQ(matrix.dump(),
            R"({"os":["linux","mac"],"python":[3.1,"3.11",3],"experimental":[false],)"
            R"("include":[{"os":"linux","cuda":12.4}],"exclude":[{"os":"mac","python":3}]})");
  EXPECT_TRUE(matrix["python"][2].is_number_integer());

  ASSERT_TRUE(build->concurrency);
  EXPECT_EQ(build->concurrency->group.value, "build-${{ matrix.os }}");
  EXPECT_EQ(build->concurrency->cancel_in_progress->value, "true");

  ASSERT_TRUE(build->container);
  const Container& container = *build->container;
  EXPECT_EQ(container.image.value, "rocm/pytorch:latest");
  EXPECT_EQ(container.options->value, "--device /dev/kfd");
  EXPECT_EQ(container.env[0].first, "HIP");
  ASSERT_EQ(container.ports.size(), 2u);
  EXPECT_EQ(container.ports[0].value, "8080");
  EXPECT_EQ(container.ports[1].value, "9090:90");
  EXPECT_EQ(container.volumes[0].value, "/data:/data");
  ASSERT_TRUE(container.credentials);
  EXPECT_EQ(container.credentials->username.value, "u");
  EXPECT_EQ(container.credentials->password.value, "${{ secrets.P }}");
  ASSERT_EQ(build->services.size(), 1u);
  EXPECT_EQ(build->services[0].first, "redis");
  EXPECT_EQ(build->services[0].second.image.value, "redis:7");
  EXPECT_EQ(build->services[0].second.ports[0].value, "6379");

  ASSERT_EQ(build->steps.size(), 2u);
  const Step& checkout = build->steps[0];
  EXPECT_EQ(checkout.index, 0);
  EXPECT_EQ(checkout.uses->value, "actions/checkout@v4");
  EXPECT_EQ(checkout.with[0].first, "fetch-depth");
  EXPECT_EQ(checkout.with[0].second.value, "0");
  EXPECT_FALSE(checkout.run);
  EXPECT_EQ(checkout.where.to_string(), "wf.yml:75:9");
  const Step& ver = build->steps[1];
  EXPECT_EQ(ver.index, 1);
  EXPECT_EQ(ver.id->value, "ver");
  EXPECT_EQ(ver.name->value, "Version");
  EXPECT_EQ(ver.if_condition->value, "github.event_name == 'push'");
  EXPECT_EQ(ver.run->value, R"(echo "v=1" >> "$GITHUB_OUTPUT")");
  EXPECT_EQ(ver.shell->value, "bash");
  EXPECT_EQ(ver.working_directory->value, "tools");
  EXPECT_EQ(ver.env[0].second.value, "y");
  EXPECT_EQ(ver.continue_on_error->value, "true");
  EXPECT_EQ(ver.timeout_minutes->value, "5");

  const Job* test = wf.find_job("test");
  ASSERT_TRUE(test);
  ASSERT_EQ(test->needs.size(), 1u);
  EXPECT_EQ(test->needs[0].value, "build");
  EXPECT_EQ(test->if_condition->value, "${{ success() }}");
  EXPECT_EQ(test->runs_on.group->value, "gpus");
  ASSERT_EQ(test->runs_on.labels.size(), 1u);
  EXPECT_EQ(test->runs_on.labels[0].value, "gpu");
  EXPECT_EQ(test->runs_on.where.to_string(), "wf.yml:90:14");
  EXPECT_EQ(wf.find_job("deploy"), nullptr);
}

TEST(LoaderModel, OnAsStringAndList) {
  Workflow one = load_ok("on: workflow_dispatch\njobs:\n  a: {runs-on: x, steps: [{run: y}]}\n");
  ASSERT_EQ(one.on.size(), 1u);
  EXPECT_EQ(one.on[0].event, "workflow_dispatch");
  EXPECT_TRUE(one.on[0].inputs.empty());
  Workflow list =
      load_ok("on: [push, pull_request]\njobs:\n  a: {runs-on: x, steps: [{run: y}]}\n");
  ASSERT_EQ(list.on.size(), 2u);
  EXPECT_EQ(list.on[1].event, "pull_request");
  EXPECT_EQ(list.on[1].where.to_string(), "wf.yml:1:12");
  EXPECT_FALSE(list.on[1].filter.branches);
}

TEST(LoaderModel, MatrixAsOneExpression) {
  Workflow wf = load_ok(R"yaml(on: push
jobs:
  a:
    runs-on: x
    strategy:
      matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}
    steps: [{run: y}]
)yaml");
  const auto& matrix = wf.jobs[0].strategy->matrix;
  ASSERT_TRUE(matrix);
  EXPECT_TRUE(matrix->is_string());
  EXPECT_EQ(matrix->get<std::string>(), "${{ fromJSON(needs.plan.outputs.matrix) }}");
}

TEST(LoaderModel, MatrixScalarTypesFollowYaml) {
  Workflow wf = load_ok(R"yaml(on: push
jobs:
  a:
    runs-on: x
    strategy:
      matrix:
        v: [1, -2, +3, 0x1F, 0o17, 2.50, 1e3, True, FALSE, ~, null, '7', "true", 1.2.3,
            12.x, 99999999999999999999, .inf, !!str 5, [1, a], {k: 2}]
    steps: [{run: y}]
)yaml");
  EXPECT_EQ(wf.jobs[0].strategy->matrix->dump(),
            R"({"v":[1,-2,3,31,15,2.5,1000.0,true,false,null,null,"7","true","1.2.3","12.x",)"
            R"(1e+20,".inf","5",[1,"a"],{"k":2}]})");
}

TEST(LoaderModel, ContainerAsImageString) {
  Workflow wf = load_ok(R"yaml(on: push
jobs:
  a:
    runs-on: x
    container: ubuntu:24.04
    environment: production
    steps: [{run: y}]
)yaml");
  EXPECT_EQ(wf.jobs[0].container->image.value, "ubuntu:24.04");
  EXPECT_EQ(wf.jobs[0].container->where.to_string(), "wf.yml:5:16");
  EXPECT_EQ(wf.jobs[0].environment->value, "production");
}

}  // namespace
}  // namespace kiln::workflow
