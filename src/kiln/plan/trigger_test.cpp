#include "kiln/plan/trigger.h"

#include <gtest/gtest.h>

namespace kiln::plan {
namespace {

using workflow::Text;
using workflow::Trigger;
using workflow::Workflow;
using Patterns = std::optional<std::vector<Text>>;

Patterns list(std::initializer_list<const char*> patterns) {
  std::vector<Text> out;
  for (const char* p : patterns) out.push_back(Text{p, {}});
  return out;
}

Workflow with(Trigger trigger) {
  Workflow workflow;
  workflow.on.push_back(std::move(trigger));
  return workflow;
}

Trigger push() {
  Trigger trigger;
  trigger.event = "push";
  return trigger;
}

Trigger pull_request(const char* name = "pull_request") {
  Trigger trigger;
  trigger.event = name;
  return trigger;
}

Event push_to(std::string ref, std::vector<std::string> files = {}, bool known = true) {
  Event event;
  event.name = "push";
  event.ref = std::move(ref);
  event.changed_files = std::move(files);
  event.changed_files_known = known;
  return event;
}

Event pr_into(std::string base, std::string action = "opened",
              std::vector<std::string> files = {"src/a.c"}) {
  Event event;
  event.name = "pull_request";
  event.action = std::move(action);
  event.base_ref = std::move(base);
  event.head_ref = "topic";
  event.ref = "refs/pull/1/merge";
  event.changed_files = std::move(files);
  event.changed_files_known = true;
  return event;
}

TEST(Trigger, MissingEvent) {
  auto decision = match_trigger(with(push()), pr_into("main"));
  EXPECT_FALSE(decision.runs);
  EXPECT_EQ(decision.reason, "the workflow has no 'pull_request' trigger");
}

TEST(Trigger, PushWithoutFiltersRunsForBranchesAndTags) {
  auto workflow = with(push());
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/anything/at/all")).runs);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/tags/v1")).runs);
}

TEST(Trigger, PushBranches) {
  auto trigger = push();
  trigger.filter.branches = list({"main", "mona/octocat", "releases/**"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main")).runs);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/releases/10")).runs);
  auto dev = match_trigger(workflow, push_to("refs/heads/dev"));
  EXPECT_FALSE(dev.runs);
  EXPECT_EQ(dev.reason, "branch 'dev' does not match on.push.branches");
  // Only branch filters: tag pushes do not run.
  auto tag = match_trigger(workflow, push_to("refs/tags/v2"));
  EXPECT_FALSE(tag.runs);
  EXPECT_EQ(tag.reason, "tag 'v2' is pushed but on.push filters only branches");
}

TEST(Trigger, PushTagsOnly) {
  auto trigger = push();
  trigger.filter.tags = list({"v2", "v1.*"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/tags/v1.9")).runs);
  EXPECT_FALSE(match_trigger(workflow, push_to("refs/tags/v3")).runs);
  auto branch = match_trigger(workflow, push_to("refs/heads/main"));
  EXPECT_FALSE(branch.runs);
  EXPECT_EQ(branch.reason, "branch 'main' is pushed but on.push filters only tags");
}

TEST(Trigger, PushBranchesIgnoreAndTagsIgnore) {
  auto trigger = push();
  trigger.filter.branches_ignore = list({"mona/octocat", "releases/**-alpha"});
  trigger.filter.tags_ignore = list({"v2", "v1.*"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main")).runs);
  auto alpha = match_trigger(workflow, push_to("refs/heads/releases/beta/3-alpha"));
  EXPECT_FALSE(alpha.runs);
  EXPECT_EQ(alpha.reason, "branch 'releases/beta/3-alpha' matches on.push.branches-ignore");
  EXPECT_FALSE(match_trigger(workflow, push_to("refs/tags/v1.0")).runs);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/tags/v3")).runs);
}

TEST(Trigger, PushBranchesWithNegation) {
  auto trigger = push();
  trigger.filter.branches = list({"releases/**", "!releases/**-alpha"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/releases/10")).runs);
  EXPECT_FALSE(match_trigger(workflow, push_to("refs/heads/releases/10-alpha")).runs);
}

TEST(Trigger, PushPaths) {
  auto trigger = push();
  trigger.filter.paths = list({"sub-project/**", "!sub-project/docs/**"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main", {"sub-project/index.js"})).runs);
  EXPECT_TRUE(
      match_trigger(workflow, push_to("refs/heads/main", {"README.md", "sub-project/src/a.js"}))
          .runs);
  auto docs = match_trigger(workflow, push_to("refs/heads/main", {"sub-project/docs/readme.md"}));
  EXPECT_FALSE(docs.runs);
  EXPECT_EQ(docs.reason, "none of the 1 changed files matches on.push.paths");
  // Unknown diff: runs.
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main", {}, false)).runs);
  // Tags are never path-filtered.
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/tags/v1", {"other.txt"})).runs);
}

TEST(Trigger, PushPathsIgnore) {
  auto trigger = push();
  trigger.filter.paths_ignore = list({"docs/**"});
  auto workflow = with(trigger);
  auto only_docs =
      match_trigger(workflow, push_to("refs/heads/main", {"docs/a.md", "docs/b/c.md"}));
  EXPECT_FALSE(only_docs.runs);
  EXPECT_EQ(only_docs.reason, "all 2 changed files match on.push.paths-ignore");
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main", {"docs/a.md", "src/x.c"})).runs);
}

TEST(Trigger, BranchesAndPathsMustBothMatch) {
  auto trigger = push();
  trigger.filter.branches = list({"main"});
  trigger.filter.paths = list({"**.js"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, push_to("refs/heads/main", {"app.js"})).runs);
  EXPECT_FALSE(match_trigger(workflow, push_to("refs/heads/main", {"app.py"})).runs);
  EXPECT_FALSE(match_trigger(workflow, push_to("refs/heads/dev", {"app.js"})).runs);
}

TEST(Trigger, PullRequestFiltersBaseBranch) {
  auto trigger = pull_request();
  trigger.filter.branches = list({"main", "releases/**"});
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, pr_into("main")).runs);
  EXPECT_TRUE(match_trigger(workflow, pr_into("releases/1.0")).runs);
  auto other = match_trigger(workflow, pr_into("dev"));
  EXPECT_FALSE(other.runs);
  EXPECT_EQ(other.reason, "base branch 'dev' does not match on.pull_request.branches");
}

TEST(Trigger, PullRequestDefaultTypes) {
  auto workflow = with(pull_request());
  EXPECT_TRUE(match_trigger(workflow, pr_into("main", "opened")).runs);
  EXPECT_TRUE(match_trigger(workflow, pr_into("main", "synchronize")).runs);
  EXPECT_TRUE(match_trigger(workflow, pr_into("main", "reopened")).runs);
  EXPECT_TRUE(match_trigger(workflow, pr_into("main", "")).runs);  // read as opened
  auto closed = match_trigger(workflow, pr_into("main", "closed"));
  EXPECT_FALSE(closed.runs);
  EXPECT_NE(closed.reason.find("not one of the default types"), std::string::npos);
}

TEST(Trigger, PullRequestExplicitTypes) {
  auto trigger = pull_request();
  trigger.filter.types = {Text{"closed", {}}, Text{"labeled", {}}};
  auto workflow = with(trigger);
  EXPECT_TRUE(match_trigger(workflow, pr_into("main", "closed")).runs);
  auto opened = match_trigger(workflow, pr_into("main", "opened"));
  EXPECT_FALSE(opened.runs);
  EXPECT_EQ(opened.reason, "pull_request activity 'opened' is not in on.pull_request.types");
}

TEST(Trigger, PullRequestTargetAndPaths) {
  auto trigger = pull_request("pull_request_target");
  trigger.filter.paths_ignore = list({"**.md"});
  auto workflow = with(trigger);
  auto event = pr_into("main", "opened", {"README.md"});
  event.name = "pull_request_target";
  EXPECT_FALSE(match_trigger(workflow, event).runs);
  event.changed_files.push_back("src/main.c");
  EXPECT_TRUE(match_trigger(workflow, event).runs);
}

TEST(Trigger, DispatchAndSchedule) {
  Trigger dispatch;
  dispatch.event = "workflow_dispatch";
  Trigger schedule;
  schedule.event = "schedule";
  schedule.cron = {Text{"30 5 * * 1,3", {}}};
  Workflow workflow;
  workflow.on = {dispatch, schedule};
  EXPECT_TRUE(match_trigger(workflow, Event{.name = "workflow_dispatch"}).runs);
  EXPECT_TRUE(match_trigger(workflow, Event{.name = "schedule"}).runs);
  EXPECT_TRUE(match_trigger(workflow, Event{.name = "schedule", .schedule = "30 5 * * 1,3"}).runs);
  EXPECT_FALSE(match_trigger(workflow, Event{.name = "schedule", .schedule = "0 0 * * *"}).runs);
  EXPECT_FALSE(match_trigger(with(push()), Event{.name = "workflow_dispatch"}).runs);
}

TEST(Trigger, BadPatternDoesNotRun) {
  auto trigger = push();
  trigger.filter.branches = list({"release/[0-9"});
  auto decision = match_trigger(with(trigger), push_to("refs/heads/main"));
  EXPECT_FALSE(decision.runs);
  EXPECT_NE(decision.reason.find("never closed"), std::string::npos);
}

workflow::InputSpec input(const char* name, const char* type, bool required = false,
                          const char* default_value = nullptr) {
  workflow::InputSpec spec;
  spec.name = name;
  spec.type = type;
  spec.required = required;
  if (default_value) spec.default_value = Text{default_value, {}};
  return spec;
}

TEST(DispatchInputs, DefaultsAndTypes) {
  Trigger trigger;
  trigger.event = "workflow_dispatch";
  auto level = input("logLevel", "choice", true, "warning");
  level.options = {"info", "warning", "debug"};
  trigger.inputs = {level, input("print_tags", "boolean", true), input("tags", "string"),
                    input("count", "number", false, "3"), input("environment", "environment")};
  auto resolved = resolve_dispatch_inputs(trigger, {{"print_tags", "TRUE"}});
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(resolved->at("logLevel"), "warning");
  EXPECT_EQ(resolved->at("print_tags"), "true");
  EXPECT_EQ(resolved->at("tags"), "");
  EXPECT_EQ(resolved->at("count"), "3");
  EXPECT_EQ(resolved->at("environment"), "");

  auto given = resolve_dispatch_inputs(
      trigger, {{"logLevel", "debug"}, {"print_tags", "false"}, {"count", "-2.5e3"}});
  ASSERT_TRUE(given) << given.error().message;
  EXPECT_EQ(given->at("logLevel"), "debug");
  EXPECT_EQ(given->at("count"), "-2.5e3");
}

TEST(DispatchInputs, Errors) {
  Trigger trigger;
  trigger.event = "workflow_dispatch";
  auto level = input("level", "choice", false, "info");
  level.options = {"info", "debug"};
  trigger.inputs = {level, input("flag", "boolean"), input("n", "number"),
                    input("name", "string", true)};
  struct Bad {
    std::map<std::string, std::string> given;
    const char* part;
  };
  const Bad bad[] = {
      {{{"name", "x"}, {"bogus", "1"}}, "unexpected input 'bogus'"},
      {{}, "input 'name' is required"},
      {{{"name", ""}}, "input 'name' is required"},
      {{{"name", "x"}, {"flag", "yes"}}, "input 'flag' must be true or false, not 'yes'"},
      {{{"name", "x"}, {"n", "12abc"}}, "input 'n' must be a number"},
      {{{"name", "x"}, {"n", "inf"}}, "input 'n' must be a number"},
      {{{"name", "x"}, {"n", ""}}, "input 'n' must be a number"},
      {{{"name", "x"}, {"level", "trace"}},
       "input 'level' must be one of [info, debug], not 'trace'"},
  };
  for (const Bad& b : bad) {
    auto resolved = resolve_dispatch_inputs(trigger, b.given);
    ASSERT_FALSE(resolved) << b.part;
    EXPECT_NE(resolved.error().message.find(b.part), std::string::npos) << resolved.error().message;
  }
  // A default that does not fit its type is reported as the default's fault.
  Trigger broken;
  broken.inputs = {input("flag", "boolean", false, "maybe")};
  auto resolved = resolve_dispatch_inputs(broken, {});
  ASSERT_FALSE(resolved);
  EXPECT_NE(resolved.error().message.find("default of input 'flag'"), std::string::npos);
}

}  // namespace
}  // namespace kiln::plan
