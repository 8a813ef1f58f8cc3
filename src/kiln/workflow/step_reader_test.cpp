// GitHub's parallel steps as the loader reads them: background, wait, wait-all, cancel and
// parallel groups (flattened), and every way of writing them wrong, located.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader_test_util.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;

std::string job(std::string_view steps) {
  return fmt::format("on: push\njobs:\n  j:\n    runs-on: x\n    steps:\n{}", steps);
}

TEST(ParallelSteps, BackgroundWaitCancelResolveToEarlierBackgroundSteps) {
  Workflow wf = load_ok(job(R"yaml(      - id: server
        run: ./serve
        background: true
      - id: build
        run: make
        background: true
      - run: test
      - wait: [build]
      - cancel: server
      - wait-all:
)yaml"));
  const auto& steps = wf.jobs[0].steps;
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_TRUE(steps[0].background);
  EXPECT_FALSE(steps[2].background);
  EXPECT_EQ(steps[3].kind, StepKind::wait);
  EXPECT_THAT(steps[3].targets, ElementsAre(1));
  EXPECT_EQ(steps[4].kind, StepKind::cancel);
  EXPECT_THAT(steps[4].targets, ElementsAre(0));
  EXPECT_EQ(steps[5].kind, StepKind::wait_all);
  EXPECT_THAT(steps[5].targets, ElementsAre(0, 1));
}

TEST(ParallelSteps, ParallelGroupBecomesBackgroundStepsAndOneWait) {
  Workflow wf = load_ok(job(R"yaml(      - run: checkout
      - parallel:
          - id: a
            run: build a
          - run: build b
      - run: test
)yaml"));
  const auto& steps = wf.jobs[0].steps;
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_TRUE(steps[1].background && steps[2].background);
  EXPECT_TRUE(steps[1].parallel_group.has_value());
  EXPECT_EQ(steps[3].kind, StepKind::wait);
  EXPECT_THAT(steps[3].targets, ElementsAre(1, 2));
  EXPECT_EQ(steps[3].parallel_group->line, 7);
  EXPECT_EQ(steps[4].index, 4);
  EXPECT_FALSE(steps[4].background);
}

TEST(ParallelSteps, WaitTargetsMustBeEarlierBackgroundSteps) {
  EXPECT_THAT(
      errors_of(job(R"yaml(      - id: fg
        run: a
      - wait: nothere
      - wait: [fg, later]
      - id: later
        run: b
        background: true
      - cancel: fg
)yaml")),
      ElementsAre("wf.yml:8:15: error: 'wait' names 'nothere', which is not the id of a step in "
                  "job 'j'",
                  "wf.yml:9:16: error: 'wait' names step 'fg', which is not a background step "
                  "(it ends before the next step starts; 'background: true' runs it beside them)",
                  "wf.yml:9:20: error: 'wait' names step 'later', which comes after it: only a "
                  "background step started before it can be waited for",
                  "wf.yml:13:17: error: 'cancel' names step 'fg', which is not a background step "
                  "(it ends before the next step starts; 'background: true' runs it beside them)"));
}

TEST(ParallelSteps, KeysThatCannotCombine) {
  EXPECT_THAT(
      errors_of(job(R"yaml(      - id: s
        run: a
        background: true
      - wait: s
        run: b
      - cancel: s
        if: always()
        env: {A: b}
      - wait-all: yes
      - cancel: [s]
      - run: c
        background: ${{ inputs.bg }}
      - wait: []
)yaml")),
      ElementsAre("wf.yml:9:9: error: a step cannot have both 'wait' and 'run'",
                  "wf.yml:12:9: error: 'if' cannot be used on a 'cancel' step: it always runs",
                  "wf.yml:13:9: error: 'env' cannot be used on a 'cancel' step",
                  "wf.yml:14:19: error: 'wait-all' takes no value: it waits for every background "
                  "step started before it",
                  "wf.yml:15:17: error: 'cancel' names one step id, not a list",
                  "wf.yml:17:21: error: 'background' must be true or false, not '${{ "
                  "inputs.bg }}'",
                  "wf.yml:18:15: error: 'wait' needs the id of a background step, or a list of "
                  "them (wait-all: waits for every one)"));
}

TEST(ParallelSteps, ParallelGroupRules) {
  EXPECT_THAT(
      errors_of(job(R"yaml(      - name: group
        parallel:
          - run: a
            background: true
          - wait-all:
          - parallel: [{run: x}]
      - parallel: []
)yaml")),
      ElementsAre("wf.yml:6:9: error: 'name' cannot be used beside 'parallel' (set it on the "
                  "group's steps)",
                  "wf.yml:9:13: error: 'background' cannot be used in a 'parallel' group: every "
                  "step of the group runs in the background",
                  "wf.yml:10:13: error: 'wait-all' cannot be used in a 'parallel' group",
                  "wf.yml:11:13: error: 'parallel' groups cannot be nested",
                  "wf.yml:12:19: error: 'parallel' needs at least one step"));
}

TEST(ParallelSteps, DuplicateIdsAcrossGroupsAndSteps) {
  EXPECT_THAT(errors_of(job(R"yaml(      - parallel:
          - id: x
            run: a
      - id: x
        run: b
)yaml")),
              ElementsAre("wf.yml:9:13: error: duplicate step id 'x' in job 'j' (first used at "
                          "line 7)"));
}

TEST(ParallelSteps, WaitAllWithNothingToWaitForIsSaid) {
  load_ok(job("      - run: a\n      - wait-all:\n"),
          {"wf.yml:7:9: warning: 'wait-all' has no background step before it to wait for"});
}

}  // namespace
}  // namespace kiln::workflow
