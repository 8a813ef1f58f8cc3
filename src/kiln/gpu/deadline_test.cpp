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

// A "driver" query that blocks until the test opens the gate, after the deadline has passed.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::atomic<bool> finished{false};

  Result<int> wait_then(int value) {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return open; });
    finished = true;
    return value;
  }
  // Opens the gate and waits (up to 500 ms) until the abandoned query finished.
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
    for (int i = 0; i < 500 && !finished; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

TEST(Deadline, ReturnsTheResultInTime) {
  auto result = call_with_deadline<int>([] { return Result<int>(42); }, 5s, "a quick query");
  ASSERT_TRUE(result);
  EXPECT_EQ(*result, 42);
}

TEST(Deadline, AWedgedQueryTimesOutAndIsAbandoned) {
  auto gate = std::make_shared<Gate>();
  auto start = std::chrono::steady_clock::now();
  auto result =
      call_with_deadline<int>([gate] { return gate->wait_then(1); }, 50ms, "the wedged driver");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::timeout);
  EXPECT_EQ(result.error().message,
            "the wedged driver did not answer within 50 ms (the query was abandoned)");
  EXPECT_FALSE(gate->finished);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  // Release the abandoned thread; it finishes on its own, holding only its captures.
  gate->release();
  EXPECT_TRUE(gate->finished);
}

TEST(Deadline, AnExceptionBecomesAnInternalError) {
  auto result = call_with_deadline<int>([]() -> Result<int> { throw std::runtime_error("boom"); },
                                        5s, "a throwing query");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::internal);
  EXPECT_EQ(result.error().message, "boom");
}

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
  auto gate = std::make_shared<Gate>();
  DeadlineWorker worker;
  ASSERT_TRUE(worker.call<int>([] { return Result<int>(1); }, 5s, "warm-up"));
  auto start = std::chrono::steady_clock::now();
  auto stuck = worker.call<int>([gate] { return gate->wait_then(2); }, 50ms, "the wedged driver");
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
  gate->release();
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
