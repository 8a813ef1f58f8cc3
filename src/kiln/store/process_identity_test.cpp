#include "kiln/store/process_identity.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/store/test_support.h"

namespace kiln::store {
namespace {

// A child that only waits to be killed.
pid_t spawn_sleeper() {
  pid_t child = fork();
  if (child == 0) {
    while (true) pause();
  }
  return child;
}

TEST(ProcessIdentity, CurrentProcessIsAlive) {
  auto self = current_process();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_time, 0);
  EXPECT_EQ(self.host, host_name());
  EXPECT_TRUE(is_process_alive(self));
}

TEST(ProcessIdentity, ReusedPidIsNotTheOwner) {
  auto self = current_process();
  ProcessIdentity impostor = self;
  impostor.start_time += 1;  // same pid, another process's start time
  EXPECT_FALSE(is_process_alive(impostor));
  ProcessIdentity unknown_start = self;
  unknown_start.start_time = 0;
  EXPECT_TRUE(is_process_alive(unknown_start));
}

TEST(ProcessIdentity, ChildIsIdentifiedAndDiesWhenKilled) {
  pid_t child = spawn_sleeper();
  ASSERT_GT(child, 0);
  testing::ChildGuard guard(child);
  auto identity = identify_process(child);
  ASSERT_TRUE(identity) << identity.error().to_string();
  EXPECT_EQ(identity->pid, child);
  // Started after us: the kernel's start time cannot be earlier.
  EXPECT_GE(identity->start_time, current_process().start_time);
  EXPECT_TRUE(is_process_alive(*identity));

  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Killed but not yet reaped: a zombie, which is no owner any more.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(is_process_alive(*identity));

  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  guard.release();
  EXPECT_FALSE(is_process_alive(*identity));
  auto gone = identify_process(child);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::not_found);
}

TEST(ProcessIdentity, NoPidIsNeverAlive) {
  EXPECT_FALSE(is_process_alive(ProcessIdentity{}));
  EXPECT_FALSE(is_process_alive(ProcessIdentity{-5, 0, ""}));
}

}  // namespace
}  // namespace kiln::store
