#include "kiln/engine/execute/background_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace kiln::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A body that runs until cancelled, noting when it started and how many ran at once.
struct Tracker {
  std::mutex mutex;
  std::vector<int> started;
  std::atomic<int> running{0};
  std::atomic<int> most{0};

  BackgroundSteps::Body until_cancelled(int step) {
    return [this, step](const exec::CancelToken& cancel) {
      {
        std::lock_guard lock(mutex);
        started.push_back(step);
      }
      int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      while (!cancel.wait_for(std::chrono::milliseconds(10))) {
      }
      --running;
    };
  }
};

TEST(BackgroundSteps, WaitHandsOverWhatTheBodyWrote) {
  BackgroundSteps steps;
  int result = 0;
  steps.start(3, [&](const exec::CancelToken&) { result = 42; });
  steps.wait(std::vector{3});
  EXPECT_EQ(result, 42);
  EXPECT_THAT(steps.unfinished(), IsEmpty());
  EXPECT_TRUE(steps.started(3));
  EXPECT_FALSE(steps.started(4));
}

TEST(BackgroundSteps, AtMostLimitRunAtOnceInStartOrder) {
  Tracker tracker;
  BackgroundSteps steps(2);
  for (int step : {0, 1, 2, 3}) steps.start(step, tracker.until_cancelled(step));
  // 2 and 3 wait for a slot: cancelling 0 lets 2 in, cancelling 1 lets 3 in.
  while (tracker.running < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_THAT(steps.unfinished(), ElementsAre(0, 1, 2, 3));
  steps.cancel(0);
  steps.wait(std::vector{0});
  while (tracker.running < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  steps.cancel(1);
  steps.wait(std::vector{1});
  while (tracker.running < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  steps.cancel(2);
  steps.cancel(3);
  steps.wait(std::vector{2, 3});
  EXPECT_EQ(tracker.most, 2);
  // 0 and 1 get their slots at once, and their threads note it in either order; 2 and 3 only
  // start when a slot is given back, in the order they were started.
  ASSERT_EQ(tracker.started.size(), 4u);
  EXPECT_THAT(std::vector(tracker.started.begin(), tracker.started.begin() + 2),
              UnorderedElementsAre(0, 1));
  EXPECT_THAT(std::vector(tracker.started.begin() + 2, tracker.started.end()), ElementsAre(2, 3));
}

TEST(BackgroundSteps, CancelledWhileQueuedStillRunsItsBodyCancelled) {
  Tracker tracker;
  BackgroundSteps steps(1);
  steps.start(0, tracker.until_cancelled(0));
  bool saw_cancelled = false;
  steps.start(1, [&](const exec::CancelToken& cancel) { saw_cancelled = cancel.cancelled(); });
  steps.cancel(1);
  steps.wait(std::vector{1});
  EXPECT_TRUE(saw_cancelled);
  EXPECT_THAT(steps.unfinished(), ElementsAre(0));
  steps.cancel(0);
  steps.wait(std::vector{0});
}

TEST(BackgroundSteps, StopTokenCancelsWhatIsWaitedFor) {
  Tracker tracker;
  BackgroundSteps steps;
  steps.start(0, tracker.until_cancelled(0));
  steps.start(1, tracker.until_cancelled(1));
  exec::CancelToken stop;
  stop.cancel();
  steps.wait(std::vector{0}, &stop);
  EXPECT_THAT(steps.unfinished(), ElementsAre(1));  // only what was waited for
  steps.cancel(1);
  steps.wait(std::vector{1});
}

TEST(BackgroundSteps, DestructorCancelsWhatStillRuns) {
  Tracker tracker;
  {
    BackgroundSteps steps;
    steps.start(0, tracker.until_cancelled(0));
    while (tracker.running < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(tracker.running, 0);
}

}  // namespace
}  // namespace kiln::engine
