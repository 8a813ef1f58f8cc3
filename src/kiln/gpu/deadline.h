#pragma once
// Running a query that may never come back (a wedged GPU driver) without hanging kiln.

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "kiln/core/result.h"

namespace kiln::gpu {

// Runs fn() on a new thread and waits at most `deadline` for its Result<T>. When the deadline
// passes first, the error is ErrorCode::timeout and the thread is ABANDONED, not stopped: C++
// cannot cancel a thread stuck in a driver call, and killing it would leave the driver's locks
// held. The thread keeps only what fn captured (capture by value: the caller may be gone when it
// returns), finishes whenever the driver lets it, and its result is dropped. A process that keeps
// calling into a wedged driver leaks one blocked thread per call, which is the price of staying
// responsive; callers should quarantine such a GPU rather than poll it in a loop.
template <class T, class Fn>
Result<T> call_with_deadline(Fn fn, std::chrono::milliseconds deadline, std::string_view what) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  try {
    std::thread([promise, fn = std::move(fn)]() mutable {
      try {
        promise->set_value(fn());
      } catch (const std::exception& e) {
        promise->set_value(fail(ErrorCode::internal, "{}", e.what()));
      } catch (...) {
        promise->set_value(fail(ErrorCode::internal, "unknown exception"));
      }
    }).detach();
  } catch (const std::system_error& e) {
    return fail(ErrorCode::io_error, "{}: cannot start a worker thread: {}", what, e.what());
  }
  if (future.wait_for(deadline) != std::future_status::ready) {
    return fail(ErrorCode::timeout, "{} did not answer within {} ms (the query was abandoned)",
                what, deadline.count());
  }
  return future.get();
}

// call_with_deadline for a caller that queries again and again (a telemetry sampler, up to ten
// times a second): the same contract, but the queries run on one thread that stays, so a call
// costs a hand-over to a waiting thread instead of starting one (on an H200 the thread start was
// most of a sample's CPU time; docs/performance.md "GPU telemetry"). When a query misses its
// deadline the worker thread is abandoned as call_with_deadline abandons its thread (it exits
// after the stuck query returns, if ever) and the next call starts a fresh one. One caller at a
// time: not thread-safe.
class DeadlineWorker {
 public:
  DeadlineWorker() = default;
  ~DeadlineWorker();  // stops an idle worker and joins it; a stuck one stays abandoned
  DeadlineWorker(const DeadlineWorker&) = delete;
  DeadlineWorker& operator=(const DeadlineWorker&) = delete;

  template <class T, class Fn>
  Result<T> call(Fn fn, std::chrono::milliseconds deadline, std::string_view what) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    KILN_TRY_VOID(post(
        [promise, fn = std::move(fn)]() mutable {
          try {
            promise->set_value(fn());
          } catch (const std::exception& e) {
            promise->set_value(fail(ErrorCode::internal, "{}", e.what()));
          } catch (...) {
            promise->set_value(fail(ErrorCode::internal, "unknown exception"));
          }
        },
        what));
    if (future.wait_for(deadline) != std::future_status::ready) {
      abandon();
      return fail(ErrorCode::timeout, "{} did not answer within {} ms (the query was abandoned)",
                  what, deadline.count());
    }
    return future.get();
  }

  // Threads started so far (1 while no query was abandoned): for tests.
  int threads_started() const { return threads_started_; }

 private:
  // What the worker thread shares with its owner; an abandoned thread keeps it alive alone.
  struct Mailbox {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<std::function<void()>> task;
    bool quit = false;
  };
  Status post(std::function<void()> task, std::string_view what);
  void abandon();

  std::shared_ptr<Mailbox> mailbox_;
  std::thread thread_;
  int threads_started_ = 0;
};

}  // namespace kiln::gpu
