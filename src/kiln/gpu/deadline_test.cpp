#include "kiln/gpu/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace kiln::gpu {
namespace {

using namespace std::chrono_literals;

TEST(DeadlineWorker, AnswersEveryCallOnOneThread) {
  DeadlineWorker worker;
  std::thread::id first;
  for (int i = 0; i < 100; ++i) {
    auto result = worker.call<int>(
        [i, &first] {
          if (first == std::thread::id{}) first = std::this_thread::get_id();
          EXPECT_EQ(std::this_thread::get_id(), first);
          return Result<int>(i * 2);
        },
        5s, "a quick query");
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(*result, i * 2);
  }
  EXPECT_NE(first, std::this_thread::get_id());
  EXPECT_EQ(worker.threads_started(), 1);
}

TEST(DeadlineWorker, AWedgedQueryIsAbandonedAndTheNextCallGetsAFreshThread) {
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
    std::atomic<bool> finished{false};
  };
  auto gate = std::make_shared<Gate>();
  DeadlineWorker worker;
  ASSERT_TRUE(worker.call<int>([] { return Result<int>(1); }, 5s, "warm-up"));
  auto start = std::chrono::steady_clock::now();
  auto stuck = worker.call<int>(
      [gate] {
        std::unique_lock lock(gate->mutex);
        gate->cv.wait(lock, [&] { return gate->open; });
        gate->finished = true;
        return Result<int>(2);
      },
      50ms, "the wedged driver");
  ASSERT_FALSE(stuck);
  EXPECT_EQ(stuck.error().code, ErrorCode::timeout);
  EXPECT_EQ(stuck.error().message,
            "the wedged driver did not answer within 50 ms (the query was abandoned)");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_FALSE(gate->finished);

  // The driver is still stuck, yet the next query answers: on a new thread.
  auto next = worker.call<int>([] { return Result<int>(3); }, 5s, "the next query");
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(*next, 3);
  EXPECT_EQ(worker.threads_started(), 2);

  // Released, the abandoned thread finishes its query and exits on its own.
  {
    std::lock_guard lock(gate->mutex);
    gate->open = true;
  }
  gate->cv.notify_all();
  for (int i = 0; i < 500 && !gate->finished; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(gate->finished);
}

TEST(DeadlineWorker, AnExceptionBecomesAnInternalErrorAndTheWorkerStays) {
  DeadlineWorker worker;
  auto thrown = worker.call<int>([]() -> Result<int> { throw std::runtime_error("boom"); }, 5s,
                                 "a throwing query");
  ASSERT_FALSE(thrown);
  EXPECT_EQ(thrown.error().code, ErrorCode::internal);
  EXPECT_EQ(thrown.error().message, "boom");
  auto after = worker.call<int>([] { return Result<int>(4); }, 5s, "the next query");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, 4);
  EXPECT_EQ(worker.threads_started(), 1);
}

TEST(DeadlineWorker, DestroyingAnUnusedWorkerIsFine) {
  DeadlineWorker worker;
  EXPECT_EQ(worker.threads_started(), 0);
}

}  // namespace
}  // namespace kiln::gpu
