#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader_test_util.h"
#include "kiln/workflow/timezone.h"

namespace kiln::workflow {
namespace {

using test::errors_of;
using test::load_ok;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --- on --------------------------------------------------------------------------------------

TEST(LoaderOn, MissingOnIsAnError) {
  EXPECT_THAT(errors_of("jobs:\n  a:\n    runs-on: x\n    steps: [{run: y}]\n"),
              ElementsAre("wf.yml:1:1: error: workflow has no 'on' (the events that trigger it)"));
}

TEST(LoaderOn, UnknownAndDuplicateEvents) {
  EXPECT_THAT(errors_of("on: pushh\njobs:\n  a:\n    runs-on: x\n    steps: [{run: y}]\n"),
              ElementsAre("wf.yml:1:5: error: unknown event 'pushh' (did you mean 'push'?)"));
  EXPECT_THAT(errors_of("on: []\njobs:\n  a:\n    runs-on: x\n    steps: [{run: y}]\n"),
              ElementsAre("wf.yml:1:5: error: 'on' must name at least one event"));
  EXPECT_THAT(errors_of("on:\njobs:\n  a:\n    runs-on: x\n    steps: [{run: y}]\n"),
              ElementsAre("wf.yml:1:1: error: 'on' must name at least one event"));
  EXPECT_THAT(errors_of("on:\n  push: main\njobs:\n  a: {runs-on: x, steps: [{run: y}]}\n"),
              ElementsAre("wf.yml:2:9: error: 'push' must be a mapping, not a string"));
  EXPECT_THAT(errors_of("on: [push, teleport, push]\njobs:\n  a:\n    runs-on: x\n    steps: "
                        "[{run: y}]\n"),
              ElementsAre("wf.yml:1:12: error: unknown event 'teleport'",
                          "wf.yml:1:22: error: duplicate event 'push'"));
}

TEST(LoaderOn, FilterConflictsAndUnknownFilterKeys) {
  EXPECT_THAT(errors_of(R"yaml(on:
  push:
    branches: [main]
    tags: [v*]
    branches-ignore: [wip]
    types: [opened]
  pull_request:
    paths-ignore: [docs/**]
    paths: [src/**]
    tags: [v1]
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:5:5: error: 'branches' and 'branches-ignore' cannot both be "
                          "used for 'push'",
                          "wf.yml:6:5: error: unknown key 'types' in 'push'",
                          "wf.yml:9:5: error: 'paths' and 'paths-ignore' cannot both be used "
                          "for 'pull_request'",
                          "wf.yml:10:5: error: unknown key 'tags' in 'pull_request'"));
}

TEST(LoaderOn, BadGlobPatternPointsAtThePattern) {
  EXPECT_THAT(errors_of(R"yaml(on:
  push:
    branches:
      - main
      - 'release/[0-9'
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:5:9: error: invalid filter pattern 'release/[0-9' at character "
                          "9: '[' is never closed by ']'"));
}

TEST(LoaderOn, BadCron) {
  EXPECT_THAT(errors_of(R"yaml(on:
  schedule:
    - cron: '0 3 * * 1'
    - cron: '61 * * * *'
    - crn: '0 0 * * *'
    - {}
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:4:13: error: invalid cron '61 * * * *': minute field '61': "
                          "61 is out of range 0-59",
                          "wf.yml:5:7: error: unknown key 'crn' in a 'schedule' entry (did you "
                          "mean 'cron'?)",
                          "wf.yml:6:7: error: a 'schedule' entry needs a 'cron'"));
}

TEST(LoaderOn, ScheduleTimezone) {
  if (!check_timezone("UTC")) GTEST_SKIP() << "this host has no time zone database";
  Workflow wf = load_ok(R"yaml(on:
  schedule:
    - cron: '0 3 * * *'
      timezone: Europe/Berlin
    - cron: '0 4 * * *'
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml");
  const Trigger& schedule = wf.on[0];
  ASSERT_EQ(schedule.cron.size(), 2u);
  ASSERT_EQ(schedule.timezones.size(), 2u);
  EXPECT_EQ(schedule.timezones[0]->value, "Europe/Berlin");
  EXPECT_FALSE(schedule.timezones[1]);
  EXPECT_THAT(errors_of("on:\n  schedule:\n    - cron: '0 3 * * *'\n      timezone: Mars/Olympus\n"
                        "    - timezone: UTC\njobs:\n  a: {runs-on: x, steps: [{run: y}]}\n"),
              ElementsAre("wf.yml:4:17: error: unknown time zone 'Mars/Olympus' (an IANA name "
                          "such as UTC, Europe/Berlin or America/New_York)",
                          "wf.yml:5:7: error: a 'schedule' entry needs a 'cron'"));
  // Nothing outside the database is read, and its other files are not zones.
  EXPECT_FALSE(check_timezone("../../etc/passwd"));
  EXPECT_FALSE(check_timezone("zone1970.tab"));
  EXPECT_FALSE(check_timezone(""));
}

TEST(LoaderOn, ImageVersion) {
  Workflow wf = load_ok(R"yaml(on:
  image_version:
    names: [gpu-runner, 'cuda-*']
    versions: '2.*'
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml");
  ASSERT_TRUE(wf.on[0].filter.names);
  EXPECT_EQ((*wf.on[0].filter.names)[1].value, "cuda-*");
  EXPECT_EQ((*wf.on[0].filter.versions)[0].value, "2.*");
  EXPECT_THAT(errors_of("on:\n  image_version:\n    name: [x]\njobs:\n  a: {runs-on: x, steps: "
                        "[{run: y}]}\n"),
              ElementsAre("wf.yml:3:5: error: unknown key 'name' in 'image_version' (did you "
                          "mean 'names'?)"));
}

TEST(LoaderOn, PullRequestTypes) {
  EXPECT_THAT(errors_of(R"yaml(on:
  pull_request:
    types: [opened, synchronise]
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:3:21: error: unknown activity type 'synchronise' for "
                          "'pull_request' (did you mean 'synchronize'?)"));
}

TEST(LoaderOn, DispatchInputs) {
  EXPECT_THAT(errors_of(R"yaml(on:
  workflow_dispatch:
    inputs:
      level:
        type: strng
      pick:
        type: choice
      flag:
        type: boolean
        default: maybe
      size:
        type: choice
        options: [small, large]
        default: huge
      1bad:
        required: sometimes
      count:
        type: number
        default: many
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:5:15: error: unknown input type 'strng' (did you mean "
                          "'string'?)",
                          "wf.yml:6:7: error: choice input 'pick' needs a list of 'options'",
                          "wf.yml:10:18: error: the default of boolean input 'flag' must be true "
                          "or false, not 'maybe'",
                          "wf.yml:14:18: error: the default 'huge' of choice input 'size' is not "
                          "one of its options",
                          "wf.yml:15:7: error: invalid input name '1bad': it must start with a "
                          "letter or '_' and hold only letters, digits, '-' and '_'",
                          "wf.yml:16:19: error: 'required' must be true or false, not "
                          "'sometimes'",
                          "wf.yml:19:18: error: the default of number input 'count' must be a "
                          "number, not 'many'"));
}

TEST(LoaderOn, OtherEventsAreAcceptedUnchecked) {
  Workflow wf = load_ok(R"yaml(on:
  release:
    types: [published]
  workflow_call:
    inputs:
      x: {type: string}
  issues:
jobs:
  a: {runs-on: x, steps: [{run: y}]}
)yaml");
  ASSERT_EQ(wf.on.size(), 3u);
  EXPECT_EQ(wf.on[0].event, "release");
  EXPECT_EQ(wf.on[2].event, "issues");
  EXPECT_EQ(wf.on[2].where.to_string(), "wf.yml:7:3");
}

TEST(LoaderOn, WorkflowCallInputsSecretsAndOutputs) {
  Workflow wf = load_ok(R"yaml(on:
  workflow_call:
    inputs:
      arch: {type: string, required: true}
      fast: {type: boolean, default: true}
      shards: {type: number, default: 2, description: how many}
    secrets:
      token: {required: true}
      optional:
    outputs:
      binary:
        description: what was built
        value: ${{ jobs.build.outputs.name }}
jobs:
  build: {runs-on: x, steps: [{run: y}]}
)yaml");
  const Trigger* call = wf.find_trigger("workflow_call");
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(call->inputs.size(), 3u);
  EXPECT_TRUE(call->find_input("arch")->required);
  EXPECT_EQ(call->find_input("fast")->type, "boolean");
  EXPECT_EQ(call->find_input("shards")->default_value->value, "2");
  ASSERT_EQ(call->secrets.size(), 2u);
  EXPECT_TRUE(call->find_secret("token")->required);
  EXPECT_FALSE(call->find_secret("optional")->required);
  ASSERT_EQ(call->outputs.size(), 1u);
  EXPECT_EQ(call->outputs[0].value.value, "${{ jobs.build.outputs.name }}");
  EXPECT_EQ(call->outputs[0].value.where.to_string(), "wf.yml:13:16");
}

TEST(LoaderOn, WorkflowCallErrors) {
  EXPECT_THAT(errors_of(R"yaml(on:
  workflow_call:
    inputs:
      untyped: {required: true}
      pick: {type: choice, options: [a]}
      flag: {type: boolean, default: maybe}
    secrets:
      key: {required: sometimes}
    outputs:
      nothing: {description: no value}
    extra: {}
jobs:
  build: {runs-on: x, steps: [{run: y}]}
)yaml"),
              ElementsAre("wf.yml:4:7: error: workflow_call input 'untyped' needs a 'type' "
                          "(boolean, number or string)",
                          "wf.yml:5:20: error: unknown workflow_call input type 'choice' "
                          "(boolean, number or string)",
                          "wf.yml:5:28: error: unknown key 'options' in input 'pick'",
                          "wf.yml:6:38: error: the default of boolean input 'flag' must be true "
                          "or false, not 'maybe'",
                          "wf.yml:8:23: error: 'required' must be true or false, not "
                          "'sometimes'",
                          "wf.yml:10:7: error: workflow_call output 'nothing' needs a 'value'",
                          "wf.yml:11:5: error: unknown key 'extra' in 'workflow_call'"));
}

}  // namespace
}  // namespace kiln::workflow
