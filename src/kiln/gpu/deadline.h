#pragma once
// Running a query that may never come back (a wedged GPU driver) without hanging kiln.

#include <chrono>
#include <exception>
#include <future>
#include <memory>
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

}  // namespace kiln::gpu
