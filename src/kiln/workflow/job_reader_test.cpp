#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/expr/expr.h"

#include "kiln/workflow/loader_test_util.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --- jobs ------------------------------------------------------------------------------------

TEST(LoaderJobs, MissingRunsOnStepsAndEmptySteps) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  nothing:
    name: empty
  empty:
    runs-on: x
    steps: []
)yaml"),
              ElementsAre("wf.yml:3:3: error: job 'nothing' has no 'runs-on'",
                          "wf.yml:3:3: error: job 'nothing' has no 'steps'",
                          "wf.yml:7:12: error: job 'empty' has no steps"));
  EXPECT_THAT(errors_of("on: push\njobs: {}\n"),
              ElementsAre("wf.yml:2:7: error: 'jobs' must define at least one job"));
  EXPECT_THAT(errors_of("on: push\n"), ElementsAre("wf.yml:1:1: error: workflow has no 'jobs'"));
}

TEST(LoaderJobs, RunsOnShapes) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: []
    steps: [{run: y}]
  b:
    runs-on: {}
    steps: [{run: y}]
  c:
    runs-on: {group: gpu, label: x}
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:4:14: error: 'runs-on' must name at least one label",
                          "wf.yml:7:14: error: 'runs-on' needs 'group' or 'labels'",
                          "wf.yml:10:22: warning: runs-on group 'gpu' is not used: this host has "
                          "no runner groups; the job runs where its labels are served",
                          "wf.yml:10:27: error: unknown key 'label' in 'runs-on' (did you mean "
                          "'labels'?)"));
}

TEST(LoaderJobs, StepNeedsExactlyOneOfRunAndUses) {
  EXPECT_THAT(
      errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: make
        uses: actions/checkout@v4
      - name: nothing to do
)yaml"),
      ElementsAre("wf.yml:6:9: error: a step cannot have both 'run' and 'uses'",
                  "wf.yml:8:9: error: a step needs 'run' or 'uses' (or one of 'wait', 'wait-all', "
                  "'cancel', 'parallel')"));
}

TEST(LoaderJobs, UsesFormat) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    steps:
      - uses: actions/checkout
      - uses: ./local/action
      - uses: docker://alpine:3
      - uses: org/repo/sub/dir@abc123
)yaml"),
              ElementsAre("wf.yml:6:15: error: invalid 'uses' value 'actions/checkout': expected "
                          "owner/repo@ref, owner/repo/path@ref, ./path or docker://image"));
}

TEST(LoaderJobs, StepIds) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    steps:
      - id: build
        run: make
      - id: 2nd
        run: make
      - id: build
        run: make test
  b:
    runs-on: x
    steps:
      - id: build
        run: make
)yaml"),
              ElementsAre("wf.yml:8:13: error: invalid step id '2nd': it must start with a letter "
                          "or '_' and hold only letters, digits, '-' and '_'",
                          "wf.yml:10:13: error: duplicate step id 'build' in job 'a' (first used "
                          "at line 6)"));
}

TEST(LoaderJobs, JobIds) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  _ok-1:
    runs-on: x
    steps: [{run: y}]
  build.linux:
    runs-on: x
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:6:3: error: invalid job id 'build.linux': it must start with a "
                          "letter or '_' and hold only letters, digits, '-' and '_'"));
}

TEST(LoaderJobs, UnknownNeeds) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  build:
    runs-on: x
    steps: [{run: y}]
  test:
    needs: [build, lint]
    runs-on: x
    steps: [{run: y}]
  deploy:
    needs: tset
    runs-on: x
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:7:20: error: job 'test' needs 'lint', which does not exist",
                          "wf.yml:11:12: error: job 'deploy' needs 'tset', which does not exist"));
}

TEST(LoaderJobs, CyclicNeedsAreNamed) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    needs: c
    runs-on: x
    steps: [{run: y}]
  b:
    needs: a
    runs-on: x
    steps: [{run: y}]
  c:
    needs: [b]
    runs-on: x
    steps: [{run: y}]
  d:
    needs: d
    runs-on: x
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:4:12: error: cyclic needs: a -> c -> b -> a",
                          "wf.yml:16:12: error: cyclic needs: d -> d"));
}

TEST(LoaderJobs, TimeoutsAndBooleans) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    timeout-minutes: ten
    continue-on-error: maybe
    strategy:
      fail-fast: ${{ inputs.fast }}
      max-parallel: -1
    steps:
      - run: y
        timeout-minutes: ${{ matrix.t }}
      - run: z
        timeout-minutes: 1.5
        continue-on-error: yes
)yaml"),
              ElementsAre("wf.yml:5:22: error: 'timeout-minutes' must be a number or an "
                          "expression, not 'ten'",
                          "wf.yml:6:24: error: 'continue-on-error' must be true, false or an "
                          "expression, not 'maybe'",
                          "wf.yml:9:21: error: 'max-parallel' must be a number or an expression, "
                          "not '-1'",
                          "wf.yml:15:28: error: 'continue-on-error' must be true, false or an "
                          "expression, not 'yes'"));
}

TEST(LoaderJobs, CallerJobReadsUsesWithAndSecrets) {
  Workflow wf = load_ok(R"yaml(on: push
jobs:
  call:
    needs: [pre]
    strategy: {matrix: {arch: [a, b]}}
    uses: org/repo/.github/workflows/build.yml@main
    with:
      x: 1
      y: ${{ matrix.arch }}
    secrets: inherit
  local:
    uses: ./.github/workflows/_t.yaml
    secrets:
      token: ${{ secrets.T }}
  pre:
    runs-on: x
    steps: [{run: echo}]
)yaml");
  ASSERT_EQ(wf.jobs.size(), 3u);
  const Job& call = wf.jobs[0];
  ASSERT_TRUE(call.calls_workflow());
  EXPECT_EQ(call.uses->value, "org/repo/.github/workflows/build.yml@main");
  EXPECT_EQ(call.uses->where.to_string(), "wf.yml:6:11");
  ASSERT_EQ(call.with.size(), 2u);
  EXPECT_EQ(call.with[1].second.value, "${{ matrix.arch }}");
  EXPECT_TRUE(call.secrets_inherit);
  const Job& local = wf.jobs[1];
  EXPECT_FALSE(local.secrets_inherit);
  ASSERT_EQ(local.secrets.size(), 1u);
  EXPECT_EQ(local.secrets[0].first, "token");
}

TEST(LoaderJobs, CallerJobErrors) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  call:
    uses: build.yml
    runs-on: x
    secrets: all
  other:
    runs-on: x
    with: {a: 1}
    steps: [{run: echo}]
)yaml"),
              ElementsAre("wf.yml:4:11: error: invalid reusable workflow 'build.yml': expected "
                          "./path/to/workflow.yml or owner/repo/path/to/workflow.yml@ref",
                          "wf.yml:5:5: error: job 'call' calls a reusable workflow: it cannot "
                          "have 'runs-on'",
                          "wf.yml:6:14: error: 'secrets' must be 'inherit' or a mapping, not "
                          "'all'",
                          "wf.yml:9:5: error: job 'other' has 'with' but no 'uses' (a reusable "
                          "workflow to call)"));
}

TEST(LoaderJobs, ContainerAndServices) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    container:
      options: --gpus all
      credentials:
        username: me
    services:
      db:
        image: postgres
        port: [5432]
      cache: [redis]
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:6:7: error: 'container' needs an 'image'",
                          "wf.yml:8:9: error: 'credentials' needs both 'username' and 'password'",
                          "wf.yml:12:9: error: unknown key 'port' in service 'db' (did you mean "
                          "'ports'?)",
                          "wf.yml:13:14: error: 'cache' must be a mapping, not a list"));
  // A service, like the job's container, may be an image name alone (GitHub's schema).
}

TEST(LoaderJobs, Snapshot) {
  Workflow wf = load_ok(R"yaml(on: push
jobs:
  a:
    runs-on: x
    snapshot: my-image
    steps: [{run: y}]
  b:
    runs-on: x
    snapshot:
      image-name: gpu-image
      version: 2.*
      if: github.ref == 'refs/heads/main'
    steps: [{run: y}]
)yaml");
  EXPECT_EQ(wf.jobs[0].snapshot->image_name.value, "my-image");
  EXPECT_EQ(wf.jobs[1].snapshot->version->value, "2.*");
  EXPECT_EQ(wf.jobs[1].snapshot->if_condition->value, "github.ref == 'refs/heads/main'");
  EXPECT_THAT(errors_of("on: push\njobs:\n  a:\n    runs-on: x\n    snapshot: {version: 1}\n"
                        "    steps: [{run: y}]\n"),
              ElementsAre("wf.yml:5:15: error: 'snapshot' needs an 'image-name'"));
}

TEST(LoaderJobs, Environment) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    environment: {url: 'https://example.com'}
    steps: [{run: y}]
  b:
    runs-on: x
    environment: [prod]
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:5:18: error: 'environment' needs a 'name'",
                          "wf.yml:9:18: error: 'environment' must be a string, not a list"));
}

TEST(LoaderJobs, ConcurrencyAndPermissions) {
  EXPECT_THAT(errors_of(R"yaml(on: push
concurrency:
  cancel-in-progress: true
permissions: read-some
jobs:
  a:
    runs-on: x
    permissions:
      contents: read
      packages: writ
    concurrency: {group: g, cancel-in-progress: sometimes}
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:3:3: error: 'concurrency' needs a 'group'",
                          "wf.yml:4:14: error: 'permissions' must be read-all, write-all or a "
                          "mapping, not 'read-some'",
                          "wf.yml:10:17: error: permission 'packages' must be read, write or "
                          "none, not 'writ'",
                          "wf.yml:11:49: error: 'cancel-in-progress' must be true, false or an "
                          "expression, not 'sometimes'"));
}

TEST(LoaderJobs, MatrixShapes) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    strategy:
      matrix:
        os: linux
        gpu: []
        include:
          - os: mac
          - plain
    steps: [{run: y}]
  b:
    runs-on: x
    strategy:
      matrix: linux
    steps: [{run: y}]
  c:
    runs-on: x
    strategy:
      matrix: {}
    steps: [{run: y}]
)yaml"),
              ElementsAre("wf.yml:7:13: error: matrix vector 'os' must be a list or an "
                          "expression, not a string",
                          "wf.yml:8:14: error: matrix vector 'gpu' must not be empty",
                          "wf.yml:11:13: error: each item of 'include' must be a mapping, not a "
                          "string",
                          "wf.yml:16:15: error: 'matrix' must be a mapping or an expression, not "
                          "a string",
                          "wf.yml:21:15: error: 'matrix' must define at least one vector or "
                          "'include'"));
}

TEST(LoaderJobs, AliasBombInMatrixIsBounded) {
  std::string yaml = "on: push\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 8; ++i)
    yaml += fmt::format("x{}: &a{} [*a{}, *a{}, *a{}, *a{}, *a{}, *a{}, *a{}, *a{}, *a{}, *a{}]\n",
                        i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
  yaml +=
      "jobs:\n  a:\n    runs-on: x\n    strategy:\n      matrix:\n        v: *a7\n"
      "    steps: [{run: y}]\n";
  auto errors = errors_of(yaml);
  // The x0..x7 keys are unknown; the matrix is cut off instead of expanding 10^8 values.
  ASSERT_EQ(errors.size(), 9u);
  EXPECT_EQ(errors.back(), "wf.yml:15:9: error: 'matrix' has more than 100000 values");
}

// --- expressions -----------------------------------------------------------------------------

// The message is the expression parser's (module expr); the place is the loader's work: the
// value's place in the file, advanced to the offending character.
std::string at(std::string_view where, std::string_view text) {
  auto status = expr::check_template(text);
  if (status) return fmt::format("'{}' unexpectedly parses", text);
  return fmt::format("wf.yml:{}: error: {}", where, status.error().message);
}

std::string condition_at(std::string_view where, std::string_view text) {
  auto parsed = expr::Expression::parse(text);
  if (parsed) return fmt::format("'{}' unexpectedly parses", text);
  return fmt::format("wf.yml:{}: error: {}", where, parsed.error().message);
}

TEST(LoaderExpressions, ColumnsInsideQuotedAndBlockScalars) {
  EXPECT_THAT(errors_of(R"yaml(on: push
run-name: "Deploy ${{ 1 + }}"
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          echo start
            echo ${{ github.ref == }}
      - run: >
          folded ${{ ( }}
      - run: echo ${{ github.sha
)yaml"),
              // After the opening quote; on the block's second line, past its indentation.
              ElementsAre(at("2:25", "${{ 1 + }}"), at("9:36", "${{ github.ref == }}"),
                          at("11:24", "${{ ( }}"), at("12:19", "echo ${{ github.sha")));
}

TEST(LoaderExpressions, IfWithoutBracesIsAnExpression) {
  EXPECT_THAT(errors_of(R"yaml(on: push
jobs:
  a:
    runs-on: x
    if: github.ref == 'refs/heads/main'
    steps:
      - run: y
        if: success() &&
      - run: z
        if: ${{ always() }}
      - run: z
        if: ${{ always( }}
)yaml"),
              ElementsAre(condition_at("8:25", "success() &&"), at("12:25", "${{ always( }}")));
}

TEST(LoaderExpressions, EveryExpressionFieldIsChecked) {
  EXPECT_THAT(errors_of(R"yaml(on: push
env:
  A: ${{ ( }}
jobs:
  a:
    runs-on: [x, '${{ ) }}']
    outputs:
      o: ${{ steps.a.outputs.x ) }}
    container:
      image: ${{ [ }}
    steps:
      - uses: some/action@v1
        with:
          k: ${{ , }}
)yaml"),
              ElementsAre(at("3:12", "${{ ( }}"), at("6:23", "${{ ) }}"),
                          at("8:32", "${{ steps.a.outputs.x ) }}"), at("10:18", "${{ [ }}"),
                          at("14:18", "${{ , }}")));
}

}  // namespace
}  // namespace kiln::workflow
