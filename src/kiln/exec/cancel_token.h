#pragma once
// CancelToken: "stop what you are doing", set once by whoever cancels a run or job (an API call,
// a signal-handling thread, a concurrency group) and observed by everything running for it.
// cancel() is async-signal-safe (an atomic store and a write(2) to an eventfd), so it may even be
// called from a signal handler. fd() lets a poll() loop (core::Subprocess::pump) wake up at once.

#include <atomic>
#include <chrono>

namespace kiln::exec {

class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Idempotent; wakes every waiter.
  void cancel() noexcept;
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

  // Waits until cancelled or `timeout` passed; returns cancelled().
  bool wait_for(std::chrono::milliseconds timeout) const;

  // Becomes (and stays) readable once cancelled; -1 if no eventfd could be made, in which case
  // waiters poll cancelled() instead.
  int fd() const noexcept { return fd_; }

 private:
  std::atomic<bool> cancelled_{false};
  int fd_ = -1;
};

}  // namespace kiln::exec
