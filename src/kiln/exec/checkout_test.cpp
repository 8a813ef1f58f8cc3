#include "kiln/exec/checkout.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions.h"
#include "kiln/exec/actions_test_support.h"

namespace kiln::exec {
namespace {

namespace fs = std::filesystem;
using testing::git;
using testing::output_of;
using testing::read_file;
using testing::RecordingContext;
using testing::TempDir;
using testing::write_file;

// A repository with two commits on main (and a tag on the first one), and a context whose
// event is the second commit on refs/heads/main.
class CheckoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = temp_.path() / "repo";
    fs::create_directories(repo_);
    git(repo_, {"init", "--quiet"});
    write_file(repo_ / "README", "first\n");
    write_file(repo_ / "src/a.txt", "a1\n");
    git(repo_, {"add", "."});
    git(repo_, {"commit", "--quiet", "-m", "first commit"});
    first_ = git(repo_, {"rev-parse", "HEAD"});
    git(repo_, {"tag", "v1"});
    write_file(repo_ / "README", "second\n");
    git(repo_, {"commit", "--quiet", "-am", "second commit"});
    second_ = git(repo_, {"rev-parse", "HEAD"});

    recording_ = std::make_unique<RecordingContext>(temp_.path());
    context().repository = repo_;
    context().sha = second_;
    context().ref = "refs/heads/main";
  }

  ActionContext& context() { return recording_->context; }
  fs::path workspace() { return context().workspace; }

  ActionResult checkout(const std::map<std::string, std::string>& with = {}) {
    auto result = run_builtin_action("actions/checkout@v4", with, context());
    EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
    return result ? *result : ActionResult{};
  }

  TempDir temp_;
  fs::path repo_;
  std::string first_, second_;
  std::unique_ptr<RecordingContext> recording_;
};

TEST_F(CheckoutTest, ChecksOutTheEventCommitWithOneCommitOfHistory) {
  auto result = checkout();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "README"), "second\n");
  EXPECT_EQ(git(workspace(), {"rev-parse", "HEAD"}), second_);
  EXPECT_EQ(git(workspace(), {"rev-list", "--count", "HEAD"}), "1");
  EXPECT_EQ(git(workspace(), {"rev-parse", "--is-shallow-repository"}), "true");
  // The branch is checked out as a local branch, as GitHub's checkout does.
  EXPECT_EQ(git(workspace(), {"symbolic-ref", "HEAD"}), "refs/heads/main");
  EXPECT_EQ(output_of(result, "ref"), "refs/heads/main");
  EXPECT_EQ(output_of(result, "commit"), second_);
}

TEST_F(CheckoutTest, EventShaThatIsNotTheBranchTipWins) {
  context().sha = first_;  // the branch moved on after the event
  auto result = checkout();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "README"), "first\n");
  EXPECT_EQ(git(workspace(), {"rev-parse", "HEAD"}), first_);
}

TEST_F(CheckoutTest, RefInputSelectsAnotherCommit) {
  auto result = checkout({{"ref", first_}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "README"), "first\n");
  EXPECT_EQ(git(workspace(), {"rev-parse", "HEAD"}), first_);
  EXPECT_EQ(output_of(result, "commit"), first_);
}

TEST_F(CheckoutTest, RefInputNamesATag) {
  auto result = checkout({{"ref", "v1"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(git(workspace(), {"rev-parse", "HEAD"}), first_);
  EXPECT_EQ(output_of(result, "ref"), "refs/tags/v1");
}

TEST_F(CheckoutTest, UnknownRefFailsTheStep) {
  auto result = checkout({{"ref", "no-such-branch"}});
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("'no-such-branch' could not be found"), std::string::npos)
      << result.error;
}

TEST_F(CheckoutTest, FetchDepthZeroFetchesAllHistoryAndTags) {
  auto result = checkout({{"fetch-depth", "0"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(git(workspace(), {"rev-list", "--count", "HEAD"}), "2");
  EXPECT_EQ(git(workspace(), {"rev-parse", "--is-shallow-repository"}), "false");
  EXPECT_EQ(git(workspace(), {"rev-parse", "v1^{commit}"}), first_);
}

TEST_F(CheckoutTest, FetchDepthZeroAfterAShallowCheckoutGetsAllHistory) {
  ASSERT_TRUE(checkout().success);
  auto result = checkout({{"fetch-depth", "0"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(git(workspace(), {"rev-list", "--count", "HEAD"}), "2");
  EXPECT_EQ(git(workspace(), {"rev-parse", "--is-shallow-repository"}), "false");
}

TEST_F(CheckoutTest, FetchDepthTwo) {
  auto result = checkout({{"fetch-depth", "2"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(git(workspace(), {"rev-list", "--count", "HEAD"}), "2");
}

TEST_F(CheckoutTest, PathInputChecksOutBelowTheWorkspace) {
  auto result = checkout({{"path", "sub/dir"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "sub/dir/src/a.txt"), "a1\n");
  EXPECT_FALSE(fs::exists(workspace() / "README"));
}

TEST_F(CheckoutTest, PathEscapingTheWorkspaceIsRefused) {
  auto result = checkout({{"path", "../outside"}});
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("is not under"), std::string::npos) << result.error;
  EXPECT_FALSE(fs::exists(temp_.path() / "outside"));
  auto absolute = checkout({{"path", (temp_.path() / "elsewhere").string()}});
  EXPECT_FALSE(absolute.success);
}

TEST_F(CheckoutTest, UncommittedChangesOfTheRepositoryAreNotIncluded) {
  write_file(repo_ / "README", "dirty\n");
  write_file(repo_ / "untracked.txt", "x\n");
  auto result = checkout();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "README"), "second\n");
  EXPECT_FALSE(fs::exists(workspace() / "untracked.txt"));
}

TEST_F(CheckoutTest, RerunCleansTheWorkspace) {
  ASSERT_TRUE(checkout().success);
  write_file(workspace() / "build/output.o", "junk");
  write_file(workspace() / "README", "edited\n");
  auto result = checkout();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_FALSE(fs::exists(workspace() / "build/output.o"));
  EXPECT_EQ(read_file(workspace() / "README"), "second\n");
}

TEST_F(CheckoutTest, CleanFalseKeepsUntrackedFiles) {
  ASSERT_TRUE(checkout().success);
  write_file(workspace() / "build/output.o", "kept");
  auto result = checkout({{"clean", "false"}, {"ref", first_}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "build/output.o"), "kept");
  EXPECT_EQ(read_file(workspace() / "README"), "first\n");
}

TEST_F(CheckoutTest, NonRepositoryContentIsDeleted) {
  write_file(workspace() / "stale/file", "from an earlier job");
  auto result = checkout({{"clean", "false"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_FALSE(fs::exists(workspace() / "stale"));
  EXPECT_TRUE(recording_->logged("Deleting the contents of")) << recording_->log_text();
}

TEST_F(CheckoutTest, SubmodulesWithoutAnyWarn) {
  auto result = checkout({{"submodules", "true"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_TRUE(recording_->logged("no submodules")) << recording_->log_text();
}

TEST_F(CheckoutTest, LocalSubmodulesAreCheckedOut) {
  fs::path lib = temp_.path() / "lib";
  fs::create_directories(lib);
  git(lib, {"init", "--quiet"});
  write_file(lib / "lib.txt", "library\n");
  git(lib, {"add", "."});
  git(lib, {"commit", "--quiet", "-m", "lib"});
  git(repo_, {"-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib.string(),
              "third_party/lib"});
  git(repo_, {"commit", "--quiet", "-m", "add submodule"});
  context().sha = git(repo_, {"rev-parse", "HEAD"});
  auto result = checkout({{"submodules", "recursive"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(workspace() / "third_party/lib/lib.txt"), "library\n");
}

TEST_F(CheckoutTest, SparseCheckout) {
  auto result = checkout({{"sparse-checkout", "src"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_TRUE(fs::exists(workspace() / "src/a.txt"));
  // Cone mode keeps files at the top level; a non-cone pattern list does not.
  auto strict = checkout({{"sparse-checkout", "/src/"}, {"sparse-checkout-cone-mode", "false"}});
  ASSERT_TRUE(strict.success) << strict.error;
  EXPECT_TRUE(fs::exists(workspace() / "src/a.txt"));
  EXPECT_FALSE(fs::exists(workspace() / "README"));
}

TEST_F(CheckoutTest, AnotherRepositoryIsRefused) {
  context().env["GITHUB_REPOSITORY"] = "octo/project";
  EXPECT_TRUE(checkout({{"repository", "Octo/Project"}}).success);
  auto result = checkout({{"repository", "someone/else"}});
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("someone/else"), std::string::npos) << result.error;
}

TEST_F(CheckoutTest, InvalidInputsFailWithTheInputName) {
  auto depth = checkout({{"fetch-depth", "deep"}});
  EXPECT_FALSE(depth.success);
  EXPECT_NE(depth.error.find("fetch-depth"), std::string::npos) << depth.error;
  auto clean = checkout({{"clean", "yes"}});
  EXPECT_FALSE(clean.success);
  EXPECT_NE(clean.error.find("clean"), std::string::npos) << clean.error;
}

}  // namespace
}  // namespace kiln::exec
