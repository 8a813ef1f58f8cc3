#pragma once
// The queue of `kiln serve`: persisted triggers (store::Trigger) taken by a fixed number of
// worker threads (serve.max_concurrent_runs). A worker fetches the trigger's commit into the
// server-side clone of the repository, checks it out in a work tree of its own, and runs the
// engine on it as `kiln run` does, with the trigger's payload as github.event. Commit statuses
// are posted per job when the repository has `statuses:`.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/core/thread_annotations.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/server/idle_hooks.h"
#include "kiln/store/store.h"

namespace kiln::server {

// What the queue needs besides the configuration: the engine options every run shares
// (GPU labels, host store, actions mirror, simulated GPUs).
struct QueueSettings {
  config::ServeConfig serve;
  engine::RunOptions base;  // repository, event and cancel are set per trigger
  std::filesystem::path work_dir;
  std::string public_url;  // links in commit statuses
  // Concurrency groups shared by every run of the server, so that a group holds across
  // triggers (engine/schedule/concurrency_registry.h).
  std::shared_ptr<engine::ConcurrencyRegistry> concurrency;
  // Where serve.idle's and serve.busy's commands run: kiln.yml's folder.
  std::filesystem::path config_dir;
};

class RunQueue {
 public:
  RunQueue(QueueSettings settings, store::Store& store);
  ~RunQueue();  // stops and joins the workers (cancel_all first to hurry them)

  // Starts the workers and takes back the triggers left `queued` by an earlier server; those
  // left `running` by a server that died are queued again (serve.on_restart: requeue, new runs
  // are made) or marked failed (on_restart: fail, or a trigger with 3 interrupted runs). Their
  // old runs stay `interrupted` (Store::mark_interrupted).
  // Replicas on one database (docs/scale-out.md): a worker runs a trigger only once it claimed
  // it (Store::claim_trigger); every k_beat_interval this server beats, takes the queued
  // triggers any replica stored, and recovers as above the running ones of a replica that
  // stopped beating for k_replica_stale (or died on this host).
  Status start();
  // The links' base when serve.public_url is not set: the address the server bound (its port
  // is known only then). Before start().
  void set_public_url(std::string url) { settings_.public_url = std::move(url); }
  bool has_public_url() const { return !settings_.public_url.empty(); }
  // Queues a trigger already stored with status queued.
  void enqueue(std::int64_t trigger_id) EXCLUDES(mutex_);
  // waiting_approval -> queued. not_found for an unknown trigger; invalid_input when it is not
  // waiting.
  Status approve(std::int64_t trigger_id, const std::string& who);
  // Cancels a trigger: one not started yet never runs, a running one's runs are cancelled.
  Status cancel_trigger(std::int64_t trigger_id) EXCLUDES(mutex_);
  // Cancels the run (engine run id) if a worker of this server runs it; false otherwise.
  bool cancel_run(std::int64_t run_id) EXCLUDES(mutex_);
  // Stops taking new triggers (queued ones stay queued in the store for the next start), and
  // the idle hook's watcher.
  void stop_taking() EXCLUDES(mutex_);
  // Waits until no trigger runs or the deadline passes; true when none runs.
  bool wait_idle(std::chrono::steady_clock::time_point deadline) EXCLUDES(mutex_);
  // Cancels every running run (per-run cancel flags).
  void cancel_all() EXCLUDES(mutex_);
  int running() const EXCLUDES(mutex_);
  // How many runs (engine runs, of all running triggers) this server executes now.
  int running_runs() const EXCLUDES(mutex_);

 private:
  struct Active {
    std::shared_ptr<std::atomic<bool>> cancel;
    std::set<std::int64_t> run_ids;
  };
  void work() EXCLUDES(mutex_);
  void execute(std::int64_t trigger_id) EXCLUDES(mutex_);
  // Requeues or fails the triggers whose claimer is gone (start(), and every beat); true when
  // there were any.
  Result<bool> recover_orphans();
  // The replica's loop: beat, recover orphans, take queued triggers; until stopping_.
  void keep_alive() EXCLUDES(mutex_);
  Result<std::filesystem::path> prepare_checkout(const store::Trigger& trigger,
                                                 const config::ServeRepository& repository)
      EXCLUDES(git_mutex_);
  // A bisection trigger (event "bisect", server/bisect.h; run_queue_bisect.cpp): its job at
  // the commits between the last good run and the regressed one, the result posted on the
  // regressed run. Returns the trigger's message, or why it failed.
  Result<std::string> bisect(store::Trigger& trigger, const config::ServeRepository& repository)
      EXCLUDES(mutex_);

  QueueSettings settings_;
  store::Store& store_;
  mutable Mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::int64_t> queue_ GUARDED_BY(mutex_);
  std::set<std::int64_t> cancelled_before_start_ GUARDED_BY(mutex_);
  std::map<std::int64_t, Active> active_ GUARDED_BY(mutex_);  // by trigger id
  bool taking_ GUARDED_BY(mutex_) = true;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;  // start() and the destructor only
  std::thread keep_alive_;            // start() and the destructor only
  Mutex git_mutex_;                   // one fetch at a time into the server-side clones
  // serve.idle and serve.busy; last, so that its watcher (which asks has_work()) stops first.
  IdleHooks hooks_;
};

}  // namespace kiln::server
