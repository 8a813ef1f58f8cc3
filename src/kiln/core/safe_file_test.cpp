#include "kiln/core/safe_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

namespace fs = std::filesystem;

class SafeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln-safe-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "victim") << "precious";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  fs::path dir_;
};

TEST_F(SafeFile, WritesAPrivateFile) {
  ASSERT_TRUE(write_fresh_file(dir_ / "step.sh", "echo hi\n"));
  EXPECT_EQ(read(dir_ / "step.sh"), "echo hi\n");
  EXPECT_EQ(fs::status(dir_ / "step.sh").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(write_fresh_file(dir_ / "step.sh", "x"));  // truncated, not appended
  EXPECT_EQ(read(dir_ / "step.sh"), "x");
}

TEST_F(SafeFile, NeverWritesThroughASymbolicLink) {
  fs::create_symlink(dir_ / "victim", dir_ / "step.sh");
  ASSERT_TRUE(write_fresh_file(dir_ / "step.sh", "rm -rf /"));
  EXPECT_EQ(read(dir_ / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(dir_ / "step.sh")));
  EXPECT_EQ(read(dir_ / "step.sh"), "rm -rf /");
}

TEST_F(SafeFile, NeverWritesThroughAHardLink) {
  fs::create_hard_link(dir_ / "victim", dir_ / "step.sh");
  ASSERT_TRUE(write_fresh_file(dir_ / "step.sh", "evil"));
  EXPECT_EQ(read(dir_ / "victim"), "precious");
  EXPECT_EQ(read(dir_ / "step.sh"), "evil");
  fs::create_hard_link(dir_ / "victim", dir_ / "out");
  ASSERT_TRUE(ensure_empty_file(dir_ / "out", std::nullopt));
  EXPECT_EQ(read(dir_ / "victim"), "precious");
  EXPECT_EQ(fs::file_size(dir_ / "out"), 0u);
}

TEST_F(SafeFile, AFifoInItsPlaceDoesNotBlock) {
  ASSERT_EQ(::mkfifo((dir_ / "step.sh").c_str(), 0600), 0);
  ASSERT_TRUE(write_fresh_file(dir_ / "step.sh", "x"));  // would block forever on the FIFO
  EXPECT_TRUE(fs::is_regular_file(dir_ / "step.sh"));
  ASSERT_EQ(::mkfifo((dir_ / "out").c_str(), 0600), 0);
  EXPECT_FALSE(read_plain_file(dir_ / "out"));
}

TEST_F(SafeFile, AnEmptyFileIsKeptAsItIs) {
  ASSERT_TRUE(ensure_empty_file(dir_ / "out", std::nullopt));
  struct stat before{};
  ASSERT_EQ(::stat((dir_ / "out").c_str(), &before), 0);
  ASSERT_TRUE(ensure_empty_file(dir_ / "out", std::nullopt));
  struct stat after{};
  ASSERT_EQ(::stat((dir_ / "out").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  std::ofstream(dir_ / "out") << "stale";
  ASSERT_TRUE(ensure_empty_file(dir_ / "out", std::nullopt));
  EXPECT_EQ(fs::file_size(dir_ / "out"), 0u);
}

TEST_F(SafeFile, ReadsNoLink) {
  std::ofstream(dir_ / "out") << "key=value\n";
  auto text = read_plain_file(dir_ / "out");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "key=value\n");
  EXPECT_EQ(read_plain_file(dir_ / "missing").value_or("?"), "");
  fs::create_symlink(dir_ / "victim", dir_ / "link");
  auto linked = read_plain_file(dir_ / "link");
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().message.find("replaced by a link"), std::string::npos);
  fs::create_hard_link(dir_ / "victim", dir_ / "hard");
  EXPECT_FALSE(read_plain_file(dir_ / "hard"));
  EXPECT_FALSE(read_plain_file(dir_));  // a directory
}

TEST_F(SafeFile, GivesTheFileToTheDirectorysOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  fs::create_directories(dir_ / "job");
  ASSERT_EQ(::chown((dir_ / "job").c_str(), 4242, 4343), 0);
  auto owner = owner_for_files_in(dir_ / "job");
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->uid, 4242u);
  ASSERT_TRUE(write_fresh_file(dir_ / "job" / "step.sh", "x", owner));
  struct stat info{};
  ASSERT_EQ(::stat((dir_ / "job" / "step.sh").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 4242u);
  EXPECT_EQ(info.st_gid, 4343u);
  EXPECT_FALSE(owner_for_files_in(dir_));  // root's own directory
}

}  // namespace
}  // namespace kiln::core
