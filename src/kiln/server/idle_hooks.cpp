#include "kiln/server/idle_hooks.h"

#include <algorithm>
#include <utility>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/core/subprocess.h"
#include "kiln/core/time.h"

namespace kiln::server {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The watcher looks at least this often: the start of work needs no look (before_work() ends a
// spell), only the time running out does; a second keeps it cheap and the timing close.
constexpr std::chrono::seconds k_look{1};
// A command past its timeout gets SIGTERM, and SIGKILL after this.
constexpr std::chrono::seconds k_kill_grace{5};

}  // namespace

std::string run_hook_command(std::string_view name, const config::ServeHook& hook,
                             const std::filesystem::path& cwd) {
  auto env = core::current_environment();
  env["KILN_HOOK"] = std::string(name);
  auto child = core::Subprocess::spawn({.argv = {"/bin/sh", "-c", hook.run},
                                        .env = std::move(env),
                                        .cwd = cwd,
                                        .output = core::OutputMode::merged});
  if (!child) return fmt::format("cannot start: {}", child.error().message);
  const auto log_line = [&](core::Stream, std::string_view line, bool) {
    spdlog::info("serve.{}: {}", name, line);
  };
  auto pumped = child->pump(log_line, SteadyClock::now() + hook.timeout);
  if (pumped && *pumped == core::Subprocess::PumpResult::finished && child->status())
    return child->status()->to_string();
  auto ended = child->terminate(k_kill_grace, log_line);
  if (!pumped) return fmt::format("{}; killed", pumped.error().message);
  return fmt::format("timed out after {}, killed ({})", core::format_duration(hook.timeout),
                     ended ? ended->to_string() : ended.error().message);
}

IdleHooks::IdleHooks(std::optional<config::ServeIdle> idle, std::optional<config::ServeHook> busy,
                     std::filesystem::path cwd, std::function<bool()> has_work, Now now,
                     Runner runner)
    : idle_(std::move(idle)),
      busy_(std::move(busy)),
      now_(now ? std::move(now) : Now([] { return SteadyClock::now(); })),
      runner_(runner ? std::move(runner)
                     : Runner([cwd = std::move(cwd)](std::string_view name,
                                                     const config::ServeHook& hook) {
                         return run_hook_command(name, hook, cwd);
                       })),
      has_work_(std::move(has_work)),
      last_work_(now_()) {}

IdleHooks::~IdleHooks() { stop(); }

void IdleHooks::start() {
  touch();  // the first spell counts from the start
  if (idle_) thread_ = std::thread([this] { loop(); });
}

void IdleHooks::stop() {
  {
    MutexLock lock(state_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void IdleHooks::touch() {
  MutexLock lock(state_mutex_);
  last_work_ = now_();
}

void IdleHooks::before_work() {
  MutexLock command(command_mutex_);
  {
    MutexLock lock(state_mutex_);
    last_work_ = now_();
    if (!idled_) return;
    idled_ = false;
  }
  if (!busy_) return spdlog::info("serve.idle: work arrived, the idle spell is over");
  spdlog::info("serve.busy: work arrived after the idle command: running {}", busy_->run);
  spdlog::info("serve.busy: {}", runner_("busy", *busy_));
}

SteadyClock::time_point IdleHooks::check() {
  MutexLock command(command_mutex_);
  // Work first, then the time: touch() comes with every change of the work, under the queue's
  // lock, so a time read after "no work" is that of the last trigger.
  const bool working = has_work_ && has_work_();
  const auto now = now_();
  SteadyClock::time_point due;
  {
    MutexLock lock(state_mutex_);
    if (!idle_ || idled_ || working || stopping_) return now + k_look;
    due = last_work_ + idle_->after;
  }
  if (now < due) return std::min(due, now + k_look);
  spdlog::info("serve.idle: no work for {}: running {}", core::format_duration(idle_->after),
               idle_->hook.run);
  spdlog::info("serve.idle: {}", runner_("idle", idle_->hook));
  MutexLock lock(state_mutex_);
  idled_ = true;
  return now_() + k_look;
}

void IdleHooks::loop() {
  while (true) {
    const auto next = check();
    MutexLock lock(state_mutex_);
    // The time to look again on the real clock (a test's `now` may run apart from it).
    const auto wait = std::clamp(next - now_(), SteadyClock::duration::zero(),
                                 std::chrono::duration_cast<SteadyClock::duration>(k_look));
    if (wake_.wait_for(lock.native(), wait, [&]() REQUIRES(state_mutex_) { return stopping_; }))
      return;
  }
}

}  // namespace kiln::server
