#pragma once
// The background steps of one job (GitHub's parallel steps: `background: true` and the members
// of a `parallel:` group). Each runs on a thread of its own, at most `limit` at once (GitHub
// runs 10; later ones wait for a free slot, in start order), while the job goes on with its next
// steps; `wait` blocks until given steps have ended, `cancel` sets a step's cancel token.
//
// Only threads, slots and tokens live here: what a step does and what it leaves (outputs,
// file commands, its log) is the body's business. A body writes its results before it returns;
// wait() returning is the hand-over, so the caller may read them without a lock afterwards.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "kiln/exec/cancel_token.h"

namespace kiln::engine {

class BackgroundSteps {
 public:
  // GitHub's limit of background steps running at once in one job.
  static constexpr std::size_t k_default_limit = 10;

  // Runs the step to its end; returns early (its processes stopped) once `cancel` is set.
  using Body = std::function<void(const exec::CancelToken& cancel)>;

  explicit BackgroundSteps(std::size_t limit = k_default_limit);
  // Cancels what still runs and waits for it: no step outlives its job.
  ~BackgroundSteps();
  BackgroundSteps(const BackgroundSteps&) = delete;
  BackgroundSteps& operator=(const BackgroundSteps&) = delete;

  // Starts `body` for step `step` (a job's step index, unique) on its own thread, as soon as a
  // slot is free. A step cancelled while it waits for a slot still runs its body, with its
  // token already set (so it ends at once as cancelled).
  void start(int step, Body body);

  // Blocks until each of `steps` that was started has ended. Once `stop` is set (the job is
  // cancelled or out of time), the ones still running are cancelled and then waited for.
  void wait(std::span<const int> steps, const exec::CancelToken* stop = nullptr);

  // Sets the step's token (no-op for a step not started or already ended).
  void cancel(int step);

  // Started and not ended yet (running or waiting for a slot), in start order.
  std::vector<int> unfinished() const;
  bool started(int step) const;

 private:
  struct Entry {
    std::unique_ptr<exec::CancelToken> cancel = std::make_unique<exec::CancelToken>();
    std::thread thread;
    bool ended = false;
  };

  void run(int step, const Body& body);

  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Entry> steps_;  // guarded by mutex_ (a thread only reads its own token)
  std::deque<int> queue_;       // waiting for a slot, in start order
  std::vector<int> order_;      // start order
  std::size_t running_ = 0;
};

}  // namespace kiln::engine
