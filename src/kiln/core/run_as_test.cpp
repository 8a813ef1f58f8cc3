#include "kiln/core/run_as.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(RunAs, NumericIdsWithAndWithoutGroup) {
  auto both = resolve_run_as("4242:4343");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->uid, 4242u);
  EXPECT_EQ(both->gid, 4343u);
  auto alone = resolve_run_as("4242");
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->uid, 4242u);
  if (!::getpwuid(4242)) {
    EXPECT_EQ(alone->gid, 4242u);  // no passwd entry: GID = UID
  }
}

TEST(RunAs, RootAndNonsenseAreRefused) {
  EXPECT_FALSE(resolve_run_as("0"));
  EXPECT_FALSE(resolve_run_as("root"));
  EXPECT_FALSE(resolve_run_as("0:0"));
  EXPECT_FALSE(resolve_run_as(""));
  EXPECT_FALSE(resolve_run_as("12:ab"));
  EXPECT_FALSE(resolve_run_as("no-such-user-kiln-test"));
  EXPECT_NE(resolve_run_as("no-such-user-kiln-test").error().message.find("useradd"),
            std::string::npos);
}

TEST(RunAs, NamedUserTakesItsGroups) {
  const passwd* nobody = ::getpwnam("nobody");
  if (!nobody) GTEST_SKIP() << "no user 'nobody' here";
  auto user = resolve_run_as("nobody");
  ASSERT_TRUE(user) << user.error().message;
  EXPECT_EQ(user->uid, nobody->pw_uid);
  EXPECT_EQ(user->gid, nobody->pw_gid);
  EXPECT_FALSE(user->groups.empty());
}

TEST(RunAs, ArgumentIsWhatTheHolderReads) {
  RunAs user{"x", 1001, 1002, {1002, 27, 44}};
  EXPECT_EQ(user.to_argument(), "1001:1002:1002,27,44");
}

TEST(RunAs, GiveToDoesNotFollowLinks) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln-run-as-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tree" / "sub");
  std::ofstream(dir / "tree" / "sub" / "file") << "x";
  std::ofstream(dir / "outside") << "y";
  fs::create_symlink(dir / "outside", dir / "tree" / "link");
  RunAs user{"t", 4242, 4343, {4343}};
  ASSERT_TRUE(give_to(dir / "tree", user));
  struct stat info{};
  ASSERT_EQ(::lstat((dir / "tree" / "sub" / "file").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 4242u);
  ASSERT_EQ(::lstat((dir / "tree" / "link").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 4242u);  // the link itself
  ASSERT_EQ(::stat((dir / "outside").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 0u);  // not what it points at
  fs::remove_all(dir);
}

TEST(RunAs, ReadableByTheUsersOwnPermissions) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln-readable-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "private");
  std::ofstream(dir / "open") << "x";
  std::ofstream(dir / "private" / "file") << "x";
  ::chmod(dir.c_str(), 0755);
  ::chmod((dir / "open").c_str(), 0644);
  ::chmod((dir / "private").c_str(), 0700);  // root's: not searchable by others
  ::chmod((dir / "private" / "file").c_str(), 0644);
  RunAs stranger{"stranger", 4242, 4343, {4343}};
  EXPECT_TRUE(check_readable_by(dir / "open", stranger));
  EXPECT_FALSE(check_readable_by(dir / "private" / "file", stranger));
  // A link the job made to a file it cannot read is judged by its target.
  fs::create_symlink(dir / "private" / "file", dir / "link");
  EXPECT_FALSE(check_readable_by(dir / "link", stranger));
  ::chmod((dir / "open").c_str(), 0600);
  EXPECT_FALSE(check_readable_by(dir / "open", stranger));
  EXPECT_TRUE(check_unreadable_by(dir / "open", stranger));
  ::chmod((dir / "open").c_str(), 0604);
  EXPECT_FALSE(check_unreadable_by(dir / "open", stranger));
  EXPECT_TRUE(check_readable_by(dir / "missing", stranger));  // the caller reports a missing file
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::core
