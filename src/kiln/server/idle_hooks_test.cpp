// serve.idle and serve.busy over a fake clock and a recording runner (IdleHooks::check() is the
// watcher's look, called here by hand), and run_hook_command with a real /bin/sh.

#include "kiln/server/idle_hooks.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/store/test_support.h"

namespace kiln::server {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

class IdleHooksTest : public ::testing::Test {
 protected:
  IdleHooks make(bool with_busy = true) {
    config::ServeIdle idle{.after = 30s, .hook = {.run = "power-down", .timeout = 10s}};
    std::optional<config::ServeHook> busy;
    if (with_busy) busy = config::ServeHook{.run = "power-up", .timeout = 10s};
    return IdleHooks(
        idle, busy, {}, [this] { return work_; }, [this] { return now_; },
        [this](std::string_view name, const config::ServeHook& hook) {
          ran_.push_back(std::string(name) + ":" + hook.run);
          return std::string("exit code 0");
        });
  }

  SteadyClock::time_point now_ = SteadyClock::time_point(1000s);
  bool work_ = false;
  std::vector<std::string> ran_;
};

TEST_F(IdleHooksTest, IdleOnceAfterTheSpellThenBusyBeforeTheNextWork) {
  // No start(), so no watcher thread: the test looks by hand. The spell counts from
  // construction, as it would from start().
  auto hooks = make();
  EXPECT_EQ(hooks.check(), now_ + 1s);  // looks again within a second
  now_ += 29s;
  hooks.check();
  EXPECT_TRUE(ran_.empty()) << "not idle for 30s yet";
  now_ += 1s;
  hooks.check();
  EXPECT_EQ(ran_, (std::vector<std::string>{"idle:power-down"}));
  now_ += 10min;
  hooks.check();
  EXPECT_EQ(ran_.size(), 1u) << "once per idle spell, however long it lasts";

  hooks.before_work();  // a trigger arrives
  EXPECT_EQ(ran_, (std::vector<std::string>{"idle:power-down", "busy:power-up"}));
  hooks.before_work();  // a second trigger of the same work: no second busy
  EXPECT_EQ(ran_.size(), 2u);

  hooks.touch();  // the work ended now
  now_ += 29s;
  hooks.check();
  EXPECT_EQ(ran_.size(), 2u) << "the next spell counts from the end of the work";
  now_ += 1s;
  hooks.check();
  EXPECT_EQ(ran_.back(), "idle:power-down");
  EXPECT_EQ(ran_.size(), 3u);
}

TEST_F(IdleHooksTest, WorkQueuedOrRunningIsNotIdle) {
  auto hooks = make();
  work_ = true;
  now_ += 2h;
  hooks.check();
  EXPECT_TRUE(ran_.empty()) << "a trigger queued or running for 2h is no idle time";
  work_ = false;
  hooks.check();
  EXPECT_EQ(ran_, (std::vector<std::string>{"idle:power-down"}));
}

TEST_F(IdleHooksTest, WithoutBusyTheSpellStillEnds) {
  auto hooks = make(/*with_busy=*/false);
  now_ += 30s;
  hooks.check();
  hooks.before_work();
  hooks.touch();
  now_ += 30s;
  hooks.check();
  EXPECT_EQ(ran_, (std::vector<std::string>{"idle:power-down", "idle:power-down"}));
}

TEST_F(IdleHooksTest, BusyOnlyAfterAnIdleCommand) {
  auto hooks = make();
  now_ += 10s;
  hooks.before_work();
  EXPECT_TRUE(ran_.empty()) << "work before any idle spell runs no busy command";
}

class HookCommandTest : public store::testing::TempDirTest {};

TEST_F(HookCommandTest, RunsThroughShInTheFolderWithKilnHook) {
  const auto out = dir_ / "out.txt";
  config::ServeHook hook{.run = "echo \"$KILN_HOOK in $(pwd)\" > out.txt; exit 3", .timeout = 10s};
  EXPECT_EQ(run_hook_command("idle", hook, dir_), "exit code 3");
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "idle in " + std::filesystem::canonical(dir_).string() + "\n");
}

TEST_F(HookCommandTest, KilledPastItsTimeout) {
  config::ServeHook hook{.run = "sleep 30", .timeout = 200ms};
  const auto ended = run_hook_command("busy", hook, dir_);
  EXPECT_EQ(ended.rfind("timed out after ", 0), 0u) << ended;
  EXPECT_NE(ended.find("killed"), std::string::npos) << ended;
}

}  // namespace
}  // namespace kiln::server
