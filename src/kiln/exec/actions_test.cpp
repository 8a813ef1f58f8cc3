#include "kiln/exec/actions.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions_support.h"
#include "kiln/exec/actions_test_support.h"

namespace kiln::exec {
namespace {

using testing::RecordingContext;
using testing::TempDir;
using testing::write_file;

TEST(BuiltinActions, RecognisesTheBuiltinsAtAnyRef) {
  EXPECT_TRUE(is_builtin_action("actions/checkout@v4"));
  EXPECT_TRUE(is_builtin_action("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"));
  EXPECT_TRUE(is_builtin_action("Actions/Upload-Artifact@main"));
  EXPECT_TRUE(is_builtin_action("actions/download-artifact@v4.1.8"));
  EXPECT_TRUE(is_builtin_action("actions/cache@v4"));
  EXPECT_TRUE(is_builtin_action("actions/cache/restore@v4"));
  EXPECT_TRUE(is_builtin_action("actions/cache/save@v3"));
}

TEST(BuiltinActions, RejectsEverythingElse) {
  EXPECT_FALSE(is_builtin_action("actions/checkout"));  // no ref
  EXPECT_FALSE(is_builtin_action("actions/checkout@"));
  EXPECT_FALSE(is_builtin_action("actions/checkoutx@v4"));
  EXPECT_FALSE(is_builtin_action("actions/setup-python@v5"));
  EXPECT_FALSE(is_builtin_action("foo/checkout@v4"));
  EXPECT_FALSE(is_builtin_action("./.github/actions/checkout"));
  EXPECT_FALSE(is_builtin_action("docker://alpine:3"));
}

TEST(BuiltinActions, UnknownActionFailsTheStepNamingIt) {
  TempDir temp;
  RecordingContext recording(temp.path());
  auto result = run_builtin_action("foo/bar@v1", {}, recording.context);
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->success);
  EXPECT_EQ(result->error, unavailable_action_message("foo/bar@v1"));
  EXPECT_TRUE(result->error.starts_with("action 'foo/bar@v1' is not available: ")) << result->error;
  for (const char* builtin : {"actions/checkout", "actions/upload-artifact",
                              "actions/download-artifact", "actions/cache", "local actions"}) {
    EXPECT_NE(result->error.find(builtin), std::string::npos) << builtin;
  }
  EXPECT_EQ(result->error.find('\n'), std::string::npos);  // one line
  EXPECT_NE(unavailable_action_message("docker://alpine").find("Docker"), std::string::npos);
  EXPECT_NE(unavailable_action_message("foo/bar").find("owner/repo@ref"), std::string::npos);
}

TEST(BuiltinActions, UnexpectedInputsWarnWithoutFailing) {
  TempDir temp;
  RecordingContext recording(temp.path());
  write_file(recording.context.workspace / "f.txt", "x");
  auto result =
      run_builtin_action("actions/upload-artifact@v4",
                         {{"path", "f.txt"}, {"nmae", "typo"}, {"zzz", "1"}}, recording.context);
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->success) << result->error;
  EXPECT_TRUE(recording.logged("Unexpected input(s) 'nmae', 'zzz'")) << recording.log_text();
}

TEST(BuiltinActions, PostActionOfAnUnknownActionIsAnError) {
  TempDir temp;
  RecordingContext recording(temp.path());
  PostAction post{.uses = "actions/checkout@v4", .description = "", .state = {}, .always = false};
  auto result = run_post_action(post, recording.context);
  EXPECT_FALSE(result.has_value());
}

TEST(ActionInputs, ReadsLikeActionsCore) {
  std::map<std::string, std::string> with{{"flag", " True "},       {"bad", "yes"},
                                          {"empty", "  "},          {"count", "12"},
                                          {"list", "a\n\n  b  \n"}, {"Mixed-Case", "v"}};
  ActionInputs inputs(with, {"flag", "bad", "empty", "count", "list", "mixed-case"});
  EXPECT_TRUE(inputs.unexpected().empty());
  EXPECT_EQ(*inputs.get_bool("flag", false), true);
  EXPECT_EQ(*inputs.get_bool("empty", true), true);  // empty means "not given"
  EXPECT_FALSE(inputs.get_bool("bad", false).has_value());
  EXPECT_EQ(*inputs.get_int("count", 0), 12);
  EXPECT_EQ(inputs.get_lines("list"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(inputs.get("mixed-case"), "v");
  EXPECT_EQ(inputs.get("missing", "default"), "default");
}

TEST(ActionPaths, ContainmentIsLexicalAndWholeSegment) {
  EXPECT_TRUE(is_within("/w/a/b", "/w"));
  EXPECT_TRUE(is_within("/w", "/w/"));
  EXPECT_FALSE(is_within("/w/../x", "/w"));
  EXPECT_FALSE(is_within("/work", "/w"));
  EXPECT_EQ(absolute_under("/w", "a/../b/"), std::filesystem::path("/w/b"));
  EXPECT_EQ(absolute_under("/w", "/abs/x"), std::filesystem::path("/abs/x"));
}

}  // namespace
}  // namespace kiln::exec
