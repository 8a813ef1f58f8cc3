#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/workflow/loader.h"
#include "kiln/workflow/references.h"

namespace kiln::workflow {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class References : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kiln-references-test-" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "repo/.github/workflows");
    fs::create_directories(root_ / "mirror/octo/tools@v1/setup");
    roots_.repository = root_ / "repo";
    roots_.mirror = root_ / "mirror";
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  fs::path root_;
  ReferenceRoots roots_;
};

TEST_F(References, ResolvesLocalAndMirrored) {
  write("repo/.github/workflows/x.yml", "on: workflow_call\n");
  write("mirror/octo/tools@v1/setup/action.yml", "runs: {using: composite, steps: []}\n");
  auto local = resolve_workflow("./.github/workflows/x.yml", roots_, {});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->display, ".github/workflows/x.yml");
  auto mirrored = resolve_action("octo/tools/setup@v1", roots_, {});
  ASSERT_TRUE(mirrored);
  EXPECT_EQ(mirrored->path, root_ / "mirror/octo/tools@v1/setup");
}

TEST_F(References, ErrorsNameTheReference) {
  SourceLocation at{"ci.yml", 3, 11};
  auto missing = resolve_action("octo/tools@v2", roots_, at);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where.to_string(), "ci.yml:3:11");
  EXPECT_THAT(missing.error().message, HasSubstr("'octo/tools@v2' is not in the actions mirror"));
  roots_.mirror.reset();
  auto no_mirror = resolve_workflow("octo/tools/.github/workflows/b.yml@v1", roots_, at);
  ASSERT_FALSE(no_mirror);
  EXPECT_THAT(no_mirror.error().message, HasSubstr("--actions-mirror DIR or KILN_ACTIONS_MIRROR"));
  EXPECT_FALSE(resolve_action("./../outside", roots_, at));
  EXPECT_FALSE(resolve_action("octo/../x@v1", roots_, at));
}

TEST_F(References, RefsMayHoldSlashesButNotLeaveTheMirror) {
  write("mirror/octo/tools@release/v1/action.yml", "runs: {using: composite, steps: []}\n");
  auto action = resolve_action("octo/tools@release/v1", roots_, {});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(action->path, root_ / "mirror/octo/tools@release/v1");
  for (const char* bad :
       {"octo/tools@release/../../x", "octo/tools@/abs", "octo/tools@a//b", "octo/tools@a/"})
    EXPECT_FALSE(resolve_action(bad, roots_, {})) << bad;
  write("repo/action.yml", "runs: {using: composite, steps: []}\n");
  auto root_action = resolve_action("./", roots_, {});
  ASSERT_TRUE(root_action);
  EXPECT_EQ(root_action->path, root_ / "repo");
}

Workflow load(std::string_view yaml) {
  auto loaded = load_workflow_text(yaml, "ci.yml");
  EXPECT_TRUE(loaded.workflow) << (loaded.diagnostics.empty() ? ""
                                                              : loaded.diagnostics[0].to_string());
  return loaded.workflow.value_or(Workflow{});
}

TEST_F(References, WhatCanOnlyBeHadLaterIsAWarning) {
  Workflow wf = load(R"yaml(on: push
jobs:
  call:
    uses: octo/missing/.github/workflows/x.yml@v1
  steps:
    runs-on: x
    steps:
      - uses: octo/absent@v1
      - uses: ./later/checked-out
)yaml");
  auto checked = check_references(wf, root_ / "repo/.github/workflows/ci.yml", roots_);
  EXPECT_FALSE(has_errors(checked.diagnostics));
  ASSERT_EQ(checked.diagnostics.size(), 3u);
  EXPECT_THAT(checked.diagnostics[0].message, HasSubstr("the call is planned unresolved"));
  ASSERT_EQ(checked.unresolved.count("octo/missing/.github/workflows/x.yml@v1"), 1u);
  EXPECT_THAT(checked.unresolved.begin()->second, HasSubstr("ci.yml:4:11: "));
  EXPECT_THAT(checked.diagnostics[1].message, HasSubstr("looked up again when its step runs"));
  EXPECT_THAT(checked.diagnostics[2].message, HasSubstr("'./later/checked-out' not found"));
}

TEST_F(References, LocalCallsInAnotherRepositoryStayThere) {
  write("mirror/octo/ci@v1/.github/workflows/outer.yml",
        "on: workflow_call\njobs:\n  inner:\n    uses: ./.github/workflows/inner.yml\n");
  write("mirror/octo/ci@v1/.github/workflows/inner.yml",
        "on: workflow_call\njobs:\n  a: {runs-on: x, steps: [{run: echo}]}\n");
  Workflow wf =
      load("on: push\njobs:\n  outer:\n    uses: octo/ci/.github/workflows/outer.yml@v1\n");
  auto checked = check_references(wf, root_ / "repo/.github/workflows/ci.yml", roots_);
  EXPECT_FALSE(has_errors(checked.diagnostics));
  ASSERT_EQ(checked.workflows.count("octo/ci/.github/workflows/inner.yml@v1"), 1u);
  const auto& outer = checked.workflows.at("octo/ci/.github/workflows/outer.yml@v1")->workflow;
  EXPECT_EQ(outer.jobs[0].uses->value, "octo/ci/.github/workflows/inner.yml@v1");
}

TEST_F(References, TypedCallInputs) {
  InputSpec boolean{"flag", "", "boolean", false, std::nullopt, {}, {}};
  InputSpec number{"n", "", "number", false, std::nullopt, {}, {}};
  InputSpec text{"s", "", "string", false, std::nullopt, {}, {}};
  EXPECT_EQ(*typed_call_input(boolean, "true", {}), nlohmann::json(true));
  EXPECT_EQ(*typed_call_input(boolean, nlohmann::json(false), {}), nlohmann::json(false));
  EXPECT_FALSE(typed_call_input(boolean, "yes", {}));
  EXPECT_EQ(*typed_call_input(number, "2.5", {}), nlohmann::json(2.5));
  EXPECT_FALSE(typed_call_input(number, "two", {}));
  EXPECT_EQ(*typed_call_input(text, nlohmann::json(3), {}), nlohmann::json("3"));
  EXPECT_FALSE(typed_call_input(text, nlohmann::json::array(), {}));
}

TEST_F(References, DepthBeyondTheLimitIsAnErrorAtTheCaller) {
  // level0 (the caller) → level1 → ... : each calls the next.
  for (int i = 1; i <= k_max_workflow_levels + 1; ++i)
    write(fmt::format("repo/.github/workflows/l{}.yml", i),
          fmt::format("on: workflow_call\njobs:\n  next:\n    uses: ./.github/workflows/l{}.yml\n",
                      i + 1));
  write(fmt::format("repo/.github/workflows/l{}.yml", k_max_workflow_levels + 2),
        "on: workflow_call\njobs:\n  leaf:\n    runs-on: x\n    steps: [{run: echo}]\n");
  Workflow top;
  top.path = "ci.yml";
  Job job;
  job.id = "call";
  job.uses = Text{"./.github/workflows/l1.yml", {"ci.yml", 4, 11}};
  top.jobs.push_back(job);
  auto check = check_references(top, root_ / "repo/ci.yml", roots_);
  ASSERT_EQ(check.diagnostics.size(), 1u);
  EXPECT_EQ(check.diagnostics[0].where.to_string(),
            fmt::format(".github/workflows/l{}.yml:4:11", k_max_workflow_levels - 1));
  EXPECT_THAT(check.diagnostics[0].message, HasSubstr("at most 10 levels"));
}

}  // namespace
}  // namespace kiln::workflow
