#include "kiln/engine/schedule/gpu_queue.h"

namespace kiln::engine {

int GpuQueue::join() {
  kiln::MutexLock lock(mutex_);
  const int owner = next_owner_++;
  waiting_[owner];
  return owner;
}

void GpuQueue::leave(int owner) {
  kiln::MutexLock lock(mutex_);
  waiting_.erase(owner);
}

void GpuQueue::set_waiting(int owner, std::vector<Waiter> waiting) {
  kiln::MutexLock lock(mutex_);
  waiting_[owner] = std::move(waiting);
}

std::optional<GpuQueue::Waiter> GpuQueue::ahead_of(int owner, int effective_rank,
                                                   std::chrono::steady_clock::time_point now,
                                                   const config::PriorityPolicy& policy) const {
  kiln::MutexLock lock(mutex_);
  std::optional<Waiter> best;
  int best_rank = effective_rank;
  for (const auto& [other, waiters] : waiting_) {
    if (other == owner) continue;
    for (const auto& waiter : waiters) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - waiter.since);
      const int rank = policy.effective_rank(waiter.rank, waited);
      if (rank < best_rank || (best && rank == best_rank && waiter.since < best->since)) {
        best_rank = rank;
        best = waiter;
      }
    }
  }
  return best;
}

}  // namespace kiln::engine
