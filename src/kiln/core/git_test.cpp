#include "kiln/core/git.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "kiln/core/text.h"

namespace kiln::core {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path make_repo(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto init = run_git({"init", "-q", dir.string()}, {});
  EXPECT_TRUE(init && init->ok());
  return fs::canonical(dir);
}

// A hook or git alias that runs kiln exports GIT_DIR and friends: git run by kiln must still
// work on the repository it names (the server's fetch once did not scrub them).
TEST(Git, IgnoresTheCallersGitDirAndWorkTree) {
  const fs::path repo = make_repo("kiln-git-test");
  const fs::path other = make_repo("kiln-git-other");
  ScopedEnv git_dir("GIT_DIR", (other / ".git").string());
  ScopedEnv work_tree("GIT_WORK_TREE", other.string());
  ScopedEnv index("GIT_INDEX_FILE", (other / ".git" / "index").string());
  auto where = run_git({"rev-parse", "--absolute-git-dir"}, repo);
  ASSERT_TRUE(where);
  ASSERT_TRUE(where->ok()) << where->reason();
  EXPECT_EQ(trim(where->out), (repo / ".git").string());
  auto top = run_git({"rev-parse", "--show-toplevel"}, repo);
  ASSERT_TRUE(top && top->ok());
  EXPECT_EQ(trim(top->out), repo.string());
  fs::remove_all(repo);
  fs::remove_all(other);
}

TEST(Git, EnvironmentHasNoPromptNoPagerAndTheCLocale) {
  ScopedEnv git_dir("GIT_DIR", "/nonexistent");
  auto env = git_environment();
  EXPECT_FALSE(env.contains("GIT_DIR"));
  EXPECT_EQ(env["GIT_TERMINAL_PROMPT"], "0");
  EXPECT_EQ(env["GIT_PAGER"], "cat");
  EXPECT_EQ(env["LC_ALL"], "C");
}

TEST(Git, FailureGivesGitsReason) {
  const fs::path repo = make_repo("kiln-git-fail");
  auto out = run_git({"rev-parse", "--verify", "no-such-ref"}, repo);
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->ok());
  EXPECT_EQ(out->reason(), "fatal: Needed a single revision");
  fs::remove_all(repo);
}

}  // namespace
}  // namespace kiln::core
