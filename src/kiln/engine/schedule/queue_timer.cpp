#include "kiln/engine/schedule/queue_timer.h"

namespace kiln::engine {

std::string_view to_string(WaitReason reason) {
  switch (reason) {
    case WaitReason::slots:
      return "slots";
    case WaitReason::max_parallel:
      return "max-parallel";
    case WaitReason::concurrency:
      return "concurrency";
    case WaitReason::priority:
      return "priority";
    case WaitReason::gpus:
      return "gpus";
    case WaitReason::approval:
      return "approval";
  }
  return "unknown";
}

namespace {

std::int64_t ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

void QueueTimer::queued(TimePoint now, std::int64_t wall_ms, std::string priority) {
  since_ = mark_ = now;
  record_.queued_at = wall_ms;
  record_.priority = std::move(priority);
}

void QueueTimer::waited_before(WaitReason reason, std::chrono::milliseconds waited) {
  if (waited.count() <= 0) return;
  since_ -= waited;
  record_.queued_at -= waited.count();
  record_.reasons_ms[std::string(to_string(reason))] += waited.count();
}

void QueueTimer::account(TimePoint now) {
  if (reason_ && now > mark_)
    record_.reasons_ms[std::string(to_string(*reason_))] += ms(now - mark_);
  mark_ = now;
}

void QueueTimer::held(WaitReason reason, TimePoint now) {
  if (ended_) return;
  account(now);
  reason_ = reason;
}

store::JobQueueTime QueueTimer::end(TimePoint now, bool started) {
  if (!ended_) {
    account(now);
    ended_ = true;
    reason_.reset();
    if (started) record_.waited_ms = ms(now - since_);
  }
  return record_;
}

}  // namespace kiln::engine
