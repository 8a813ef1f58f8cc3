#pragma once
// A queued job's wait, on the scheduler's clock (store/records.h JobQueueTime): since when it is
// queued, and at each pass of the scheduler the reason it could not start. The time from one
// pass to the next is the reason's that held it at the first; the start ends the wait.

#include <chrono>
#include <optional>
#include <string>

#include "kiln/store/records.h"

namespace kiln::engine {

// The reasons, with their names in JobQueueTime::reasons_ms.
enum class WaitReason { slots, max_parallel, concurrency, priority, gpus, approval };
std::string_view to_string(WaitReason reason);

class QueueTimer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Queued at `now` (wall: `wall_ms`), or earlier: `waiting_since`, a wait for `reason` before the
  // job existed (its run's concurrency group, the pull request's approval).
  void queued(TimePoint now, std::int64_t wall_ms, std::string priority);
  void waited_before(WaitReason reason, std::chrono::milliseconds waited);

  // A pass found it held by `reason` at `now`.
  void held(WaitReason reason, TimePoint now);

  // The job starts at `now`, or ends without starting (`started` false). The record to keep.
  store::JobQueueTime end(TimePoint now, bool started);

  // What is known so far (its class and since when; the reasons up to the last pass).
  const store::JobQueueTime& record() const { return record_; }
  TimePoint since() const { return since_; }
  const std::string& priority() const { return record_.priority; }
  std::optional<WaitReason> reason() const { return reason_; }

 private:
  void account(TimePoint now);

  store::JobQueueTime record_;
  TimePoint since_{};
  TimePoint mark_{};
  std::optional<WaitReason> reason_;
  bool ended_ = false;
};

}  // namespace kiln::engine
