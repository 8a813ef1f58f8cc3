#pragma once
// The engine's clock seam: the scheduler measures runs and the recorder stamps rows through it, so
// that tests run on a clock they move themselves (no sleeps, no timing asserts).

#include <chrono>
#include <cstdint>

namespace kiln::engine {

class Clock {
 public:
  virtual ~Clock() = default;
  // For durations: never goes back.
  virtual std::chrono::steady_clock::time_point now() const = 0;
  // For the store's timestamps: milliseconds since the epoch.
  virtual std::int64_t wall_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  std::int64_t wall_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace kiln::engine
