// The worker of DeadlineWorker (deadline.h).

#include "kiln/gpu/deadline.h"

namespace kiln::gpu {

DeadlineWorker::~DeadlineWorker() {
  if (!mailbox_) return;
  {
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->quit = true;
  }
  mailbox_->cv.notify_one();
  thread_.join();  // idle: the last query answered in time, so the thread is not stuck
}

Status DeadlineWorker::post(std::function<void()> task, std::string_view what) {
  if (!mailbox_) {
    auto mailbox = std::make_shared<Mailbox>();
    try {
      thread_ = std::thread([mailbox] {
        std::unique_lock lock(mailbox->mutex);
        for (;;) {
          mailbox->cv.wait(lock, [&] { return mailbox->quit || mailbox->task; });
          if (!mailbox->task) return;  // quit with nothing left to do
          auto next = std::move(*mailbox->task);
          mailbox->task.reset();
          lock.unlock();
          next();  // may block in a driver for ever; the owner then abandons this thread
          lock.lock();
          if (mailbox->quit) return;
        }
      });
    } catch (const std::system_error& e) {
      return fail(ErrorCode::io_error, "{}: cannot start a worker thread: {}", what, e.what());
    }
    ++threads_started_;
    mailbox_ = std::move(mailbox);
  }
  {
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->task = std::move(task);
  }
  mailbox_->cv.notify_one();
  return {};
}

void DeadlineWorker::abandon() {
  {
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->quit = true;  // exit once the stuck query returns
  }
  thread_.detach();
  mailbox_.reset();
}

}  // namespace kiln::gpu
