#pragma once
// serve.idle and serve.busy (docs/serve.md "Idle and busy hooks"): a command run once when the
// server has had no work for serve.idle.after (power the GPUs down, scale the host in), and
// another when work arrives after it (power them up again).
//
// - Work is a trigger queued in or run by this server's RunQueue. The idle time counts from the
//   server's start and from the start and the end of every trigger, and only while nothing is
//   queued or running. The idle command runs once per idle spell; after it, the next trigger a
//   worker takes ends the spell.
// - The busy command runs in that worker before the trigger's checkout and jobs: the trigger
//   waits for it, so that what the idle command took away is back before a job needs it. A
//   trigger that arrives while the idle command still runs waits for that too, then the busy one.
// - Each command runs through /bin/sh -c in `cwd` (kiln.yml's folder) with the server's
//   environment plus KILN_HOOK=idle or busy; its output lines go to the server's log. One that
//   outlives its timeout is killed with its process group. A failure is logged and changes
//   nothing else: the spell still counts as idle, the trigger still runs.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "kiln/config/host_config.h"
#include "kiln/core/thread_annotations.h"

namespace kiln::server {

// Runs one hook's command to its end or its timeout; returns how it ended, for the log
// ("exit code 0", "timed out after 10s, killed").
std::string run_hook_command(std::string_view name, const config::ServeHook& hook,
                             const std::filesystem::path& cwd);

class IdleHooks {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;
  // Runs a hook (name "idle" or "busy"); run_hook_command by default. Tests record instead.
  using Runner = std::function<std::string(std::string_view name, const config::ServeHook&)>;

  // `has_work` tells whether a trigger is queued or running; the watcher calls it without any
  // lock of this object held.
  IdleHooks(std::optional<config::ServeIdle> idle, std::optional<config::ServeHook> busy,
            std::filesystem::path cwd, std::function<bool()> has_work, Now now = {},
            Runner runner = {});
  ~IdleHooks();  // stop()

  // Starts the watcher's thread when serve.idle is set; the first spell counts from now.
  void start() EXCLUDES(state_mutex_);
  // Stops the watcher (after an idle command that runs has ended).
  void stop() EXCLUDES(state_mutex_);

  // A trigger started or ended: the idle time counts again from now. The queue calls it under
  // its own lock, together with the change has_work() sees, so the watcher never sees no work
  // with a stale time.
  void touch() EXCLUDES(state_mutex_);
  // A worker is about to run a trigger: ends an idle spell whose command ran, running the busy
  // command first (the caller waits for it and for an idle command still running).
  void before_work() EXCLUDES(command_mutex_, state_mutex_);
  // One look of the watcher: runs the idle command when it is due; returns when to look again.
  std::chrono::steady_clock::time_point check() EXCLUDES(command_mutex_, state_mutex_);

 private:
  void loop() EXCLUDES(state_mutex_);

  const std::optional<config::ServeIdle> idle_;
  const std::optional<config::ServeHook> busy_;
  const Now now_;
  const Runner runner_;
  const std::function<bool()> has_work_;
  // Held while deciding on and running a command, so that idle and busy commands never overlap
  // and a busy command always comes after the idle command it answers.
  Mutex command_mutex_;  // taken before state_mutex_, never after
  mutable Mutex state_mutex_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point last_work_ GUARDED_BY(state_mutex_);
  bool idled_ GUARDED_BY(state_mutex_) = false;  // the idle command ran; no work since
  bool stopping_ GUARDED_BY(state_mutex_) = false;
  std::thread thread_;
};

}  // namespace kiln::server
