#include "kiln/exec/kernel_oom.h"

#include <gtest/gtest.h>

namespace kiln::exec {
namespace {

TEST(KernelOom, ReadsTheKillRecordsOfTheOomKiller) {
  // As a 6.x kernel logs a cgroup limit's kill and the host's; the other records of the same
  // report (the task list, the constraint line) are not kills.
  EXPECT_EQ(oom_kill_message("3,5744,83990917471,-;Memory cgroup out of memory: Killed process "
                             "1653 (python3) total-vm:221368kB, anon-rss:32384kB\n"),
            "Memory cgroup out of memory: Killed process 1653 (python3) total-vm:221368kB, "
            "anon-rss:32384kB");
  EXPECT_EQ(oom_kill_message("3,10,5,-;Out of memory: Killed process 77 (java) total-vm:1kB\n "
                             "SUBSYSTEM=x\n"),
            "Out of memory: Killed process 77 (java) total-vm:1kB");
  EXPECT_EQ(oom_kill_message("6,5743,83990917452,-;oom-kill:constraint=CONSTRAINT_MEMCG,"
                             "task=python3,pid=1653,uid=0\n"),
            std::nullopt);
  EXPECT_EQ(oom_kill_message("6,1,1,-;usb 1-1: new high-speed USB device\n"), std::nullopt);
  EXPECT_EQ(oom_kill_message("no separator"), std::nullopt);
}

TEST(KernelOom, AnUnreadableLogIsInertAndSaysWhy) {
  OomWatch watch("/nonexistent/kmsg");
  EXPECT_FALSE(watch.readable());
  EXPECT_NE(watch.unreadable_reason().find("/nonexistent/kmsg"), std::string::npos);
  EXPECT_TRUE(watch.kills().empty());
}

}  // namespace
}  // namespace kiln::exec
