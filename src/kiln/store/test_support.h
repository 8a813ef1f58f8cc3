#pragma once
// For the store's tests only: a fresh directory per test, kept when the test fails so the
// database can be inspected.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>

namespace kiln::store::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (HasFailure()) {
      std::printf("test files kept in %s\n", dir_.c_str());
      return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path db_path() const { return dir_ / "state" / "kiln.db"; }

  std::filesystem::path dir_;
};

// Kills and reaps a forked child when a test ends early, so a failed assertion never leaves
// a process behind. release() once the test has reaped the child itself.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  void release() { pid_ = 0; }

 private:
  pid_t pid_;
};

}  // namespace kiln::store::testing
