#include "kiln/engine/execute/background_steps.h"

#include <algorithm>
#include <chrono>

namespace kiln::engine {

BackgroundSteps::BackgroundSteps(std::size_t limit) : limit_(std::max<std::size_t>(limit, 1)) {}

BackgroundSteps::~BackgroundSteps() {
  std::vector<int> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [step, entry] : steps_) all.push_back(step);
  }
  for (int step : all) cancel(step);
  wait(all);
}

void BackgroundSteps::start(int step, Body body) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = steps_.try_emplace(step);
  if (!inserted) return;
  order_.push_back(step);
  queue_.push_back(step);
  it->second.thread = std::thread([this, step, body = std::move(body)] { run(step, body); });
}

void BackgroundSteps::run(int step, const Body& body) {
  const exec::CancelToken* cancel = nullptr;
  {
    std::unique_lock lock(mutex_);
    cancel = steps_.at(step).cancel.get();
    // First come, first served; a cancelled step does not wait for a slot.
    changed_.wait(
        lock, [&] { return cancel->cancelled() || (running_ < limit_ && queue_.front() == step); });
    std::erase(queue_, step);
    ++running_;
    changed_.notify_all();  // the next in the queue may fit too
  }
  body(*cancel);
  std::lock_guard lock(mutex_);
  --running_;
  steps_.at(step).ended = true;
  changed_.notify_all();
}

void BackgroundSteps::wait(std::span<const int> steps, const exec::CancelToken* stop) {
  std::unique_lock lock(mutex_);
  for (int step : steps) {
    auto it = steps_.find(step);
    if (it == steps_.end()) continue;
    // The job's token has no condition variable: look at it every 50 ms.
    while (!it->second.ended) {
      if (stop != nullptr && stop->cancelled()) {
        for (int other : steps)
          if (auto o = steps_.find(other); o != steps_.end() && !o->second.ended)
            o->second.cancel->cancel();
        changed_.notify_all();
        stop = nullptr;  // cancelled once; now wait for them to end
      }
      changed_.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (it->second.thread.joinable()) {
      std::thread thread = std::move(it->second.thread);
      lock.unlock();
      thread.join();
      lock.lock();
    }
  }
}

void BackgroundSteps::cancel(int step) {
  std::lock_guard lock(mutex_);
  auto it = steps_.find(step);
  if (it == steps_.end() || it->second.ended) return;
  it->second.cancel->cancel();
  changed_.notify_all();
}

std::vector<int> BackgroundSteps::unfinished() const {
  std::lock_guard lock(mutex_);
  std::vector<int> result;
  for (int step : order_)
    if (!steps_.at(step).ended) result.push_back(step);
  return result;
}

bool BackgroundSteps::started(int step) const {
  std::lock_guard lock(mutex_);
  return steps_.contains(step);
}

}  // namespace kiln::engine
