#pragma once
// The GPU jobs of several engine calls of one process that wait for GPUs, with their priority
// classes (kiln.yml priority:, config/priority_config.h). Within one engine call the scheduler
// orders its own queue; `kiln serve` runs one engine call per trigger, and a push to main in one
// must not lose the GPUs to a pull request in another. So before it places a GPU job, each call
// asks whether another call has a job of a higher class (after aging) waiting for GPUs: then it
// leaves the GPUs to it. Jobs of the same class in different calls take the GPUs as they come
// free, as before. Thread-safe: each call's scheduler thread publishes and asks.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/config/priority_config.h"
#include "kiln/core/thread_annotations.h"

namespace kiln::engine {

class GpuQueue {
 public:
  struct Waiter {
    int rank = 0;          // its class: PriorityPolicy::classify's rank, before aging
    std::string priority;  // the class's name
    std::chrono::steady_clock::time_point since;  // queued since
    std::string job;                              // "ci / train (run 7)", for the wait message
  };

  int join() EXCLUDES(mutex_);
  void leave(int owner) EXCLUDES(mutex_);

  // What `owner` has waiting for GPUs now (replacing what it said before).
  void set_waiting(int owner, std::vector<Waiter> waiting) EXCLUDES(mutex_);

  // The waiter of another owner with the best class at `now` (aged by `policy`, which every
  // owner shares), if it is better than `effective_rank`; the longest waiting among equals.
  std::optional<Waiter> ahead_of(int owner, int effective_rank,
                                 std::chrono::steady_clock::time_point now,
                                 const config::PriorityPolicy& policy) const EXCLUDES(mutex_);

 private:
  mutable kiln::Mutex mutex_;
  int next_owner_ GUARDED_BY(mutex_) = 1;
  std::map<int, std::vector<Waiter>> waiting_ GUARDED_BY(mutex_);
};

}  // namespace kiln::engine
