#include "kiln/server/run_queue.h"

#include <algorithm>
#include <fstream>
#include <functional>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/core/git.h"
#include "kiln/core/subprocess.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/server/bisect.h"
#include "kiln/server/check_client.h"
#include "kiln/server/recovery.h"
#include "kiln/server/status_client.h"
#include "kiln/server/webhook.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using store::Trigger;
using store::TriggerStatus;

// serve.on_restart: requeue gives up on a trigger with this many interrupted runs.
constexpr int k_max_interrupted_runs = 3;

// Replicas (docs/scale-out.md): how often a server beats and looks for queued triggers, and how
// long another host's replica may stay silent before its running triggers are recovered.
constexpr std::chrono::seconds k_beat_interval{2};
constexpr std::chrono::seconds k_replica_stale{10};

Result<std::string> git(const fs::path& cwd, const std::vector<std::string>& args) {
  KILN_TRY(auto out, core::run_git(args, cwd));
  if (!out.ok()) return fail(ErrorCode::io_error, "git {}: {}", fmt::join(args, " "), out.reason());
  return out.out;
}

// The commit a trigger runs, for the dashboard: {message, author} from the checkout; null when
// git cannot say (the run goes on without it).
nlohmann::json commit_of(const fs::path& checkout, const std::string& sha) {
  constexpr std::size_t k_max_message = 16 * 1024;
  auto out = core::run_git({"log", "-1", "--format=%an%x00%B", sha, "--"}, checkout);
  if (!out || !out->ok()) return nullptr;
  const auto nul = out->out.find('\0');
  if (nul == std::string::npos) return nullptr;
  std::string message = out->out.substr(nul + 1, k_max_message);
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  return {{"message", message}, {"author", out->out.substr(0, nul)}};
}

// Reports jobs to the forge as commit statuses and remembers the runs the engine creates, so
// that the API can cancel them; stamps each run with its trigger and commit (GET /api/runs/ID).
// Called from job threads.
class ServeObserver final : public engine::RunObserver {
 public:
  ServeObserver(store::Store& store, Trigger trigger, const config::ServeRepository& repository,
                std::string public_url, std::string trigger_url, nlohmann::json commit,
                std::function<void(std::int64_t)> on_run)
      : store_(store),
        trigger_id_(trigger.id),
        repository_(trigger.repository),
        sha_(trigger.sha),
        trigger_(std::move(trigger)),
        trigger_url_(std::move(trigger_url)),
        commit_(std::move(commit)),
        on_run_(std::move(on_run)) {
    if (!repository.statuses_api_url.empty())
      client_.emplace(repository.statuses_api_url, repository.statuses_token);
    if (repository.checks) checks_.emplace(repository, sha_, public_url, trigger_url_, store_);
  }

  void run_started(const std::string&, std::int64_t run_id) EXCLUDES(mutex_) override {
    MutexLock lock(mutex_);
    if (!trigger_.run_ids.is_array()) trigger_.run_ids = nlohmann::json::array();
    trigger_.run_ids.push_back(run_id);
    if (auto updated = store_.update_trigger(trigger_); !updated)
      spdlog::warn("trigger {}: {}", trigger_id_, updated.error().message);
    stamp_run(run_id);
    on_run_(run_id);
  }
  void job_started(const std::string& job_key) override {
    post(job_key, "pending", "running");
    if (checks_) checks_->job_started(job_key);
  }
  void job_line(const std::string&, std::string_view, std::string_view) override {}
  void job_finished(const engine::JobSummary& job) override {
    if (checks_) checks_->job_finished(job);
    if (job.conclusion == store::Conclusion::skipped) return;
    const bool ok = job.conclusion == store::Conclusion::success;
    post(job.key, ok ? "success" : "failure",
         fmt::format("{} in {:.1f}s", store::to_string(job.conclusion),
                     static_cast<double>(job.duration.count()) / 1000.0));
  }
  void progress(int, int, const std::vector<std::string>&) override {}
  void warning(const std::string& text) override {
    spdlog::warn("trigger {}: {}", trigger_id_, text);
  }
  nlohmann::json run_ids() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return trigger_.run_ids;
  }

 private:
  // The run's extra gets who and what started it. Called while the engine has just created the
  // run and writes nothing else to its row.
  void stamp_run(std::int64_t run_id) REQUIRES(mutex_) {
    auto run = store_.get_run(run_id);
    if (!run) return spdlog::warn("trigger {}: {}", trigger_id_, run.error().message);
    if (!run->extra.is_object()) run->extra = nlohmann::json::object();
    run->extra["trigger"] = {
        {"id", trigger_id_}, {"sender", trigger_.sender}, {"received_at", trigger_.created_at}};
    run->extra["commit"] = commit_;
    if (auto updated = store_.update_run(*run); !updated)
      spdlog::warn("trigger {}: {}", trigger_id_, updated.error().message);
  }

  void post(const std::string& job_key, const char* state, const std::string& description) {
    if (!client_) return;
    CommitStatus status{state, "kiln / " + job_key, description, trigger_url_};
    if (auto posted = client_->post(repository_, sha_, status); !posted)
      spdlog::warn("trigger {}: {}", trigger_id_, posted.error().message);
  }

  Mutex mutex_;
  store::Store& store_;
  const std::int64_t trigger_id_;
  const std::string repository_;
  const std::string sha_;
  Trigger trigger_ GUARDED_BY(mutex_);  // its run_ids grow as runs start
  std::string trigger_url_;
  const nlohmann::json commit_;
  std::function<void(std::int64_t)> on_run_;
  std::optional<StatusClient> client_;
  std::optional<JobChecks> checks_;
};

// refs/heads/main -> refs/kiln/heads/main: fetched refs live apart from anything else.
std::string local_ref(const std::string& ref) {
  return "refs/kiln/" + (ref.starts_with("refs/") ? ref.substr(5) : ref);
}

}  // namespace

RunQueue::RunQueue(QueueSettings settings, store::Store& store)
    : settings_(std::move(settings)),
      store_(store),
      hooks_(settings_.serve.idle, settings_.serve.busy, settings_.config_dir,
             [this]() EXCLUDES(mutex_) {
               MutexLock lock(mutex_);
               return !queue_.empty() || !active_.empty();
             }) {}

RunQueue::~RunQueue() {
  hooks_.stop();
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    taking_ = false;
  }
  changed_.notify_all();
  for (auto& worker : workers_) worker.join();
  if (keep_alive_.joinable()) keep_alive_.join();
}

Result<bool> RunQueue::recover_orphans() {
  const auto stale_before =
      store::now_ms() -
      std::chrono::duration_cast<std::chrono::milliseconds>(k_replica_stale).count();
  KILN_TRY(auto orphans, store_.list_orphaned_triggers(stale_before));
  for (auto id : orphans) {
    KILN_TRY(auto trigger, store_.get_trigger(id));
    if (trigger.status != TriggerStatus::running) continue;
    // A trigger whose runs keep dying with the server (a job that takes the host down) is not
    // requeued for ever.
    int interrupted_runs = 0;
    int runs = 0, finished_runs = 0, failed_runs = 0, cancelled_runs = 0;
    if (trigger.run_ids.is_array())
      for (const auto& run_id : trigger.run_ids)
        if (run_id.is_number_integer()) {
          ++runs;
          auto run = store_.get_run(run_id.get<std::int64_t>());
          if (!run) continue;
          if (run->status == store::RunStatus::interrupted)
            ++interrupted_runs;
          else if (store::is_terminal(run->status))
            ++finished_runs;
          if (run->status == store::RunStatus::failure) ++failed_runs;
          if (run->status == store::RunStatus::cancelled) ++cancelled_runs;
        }
    // Every run ended and only the trigger's own record was left to write when the server died
    // (the engine starts all of a trigger's runs before any job does): it is recorded as it
    // ended, not run a second time. With an interrupted run among them it is requeued, as the
    // runs of one attempt cannot be told from an earlier attempt's.
    if (runs > 0 && interrupted_runs == 0 && finished_runs == runs) {
      trigger.status = cancelled_runs > 0 ? TriggerStatus::cancelled : TriggerStatus::finished;
      trigger.message = fmt::format(
          "{} run(s), {}; recorded after the server that ran them stopped", finished_runs,
          failed_runs > 0      ? "a job failed"
          : cancelled_runs > 0 ? "cancelled"
                               : "all succeeded");
      trigger.updated_at = 0;
      KILN_TRY_VOID(store_.update_trigger(trigger));
      spdlog::info("trigger {}: left running by a server that stopped after its runs ended: {}",
                   trigger.id, trigger.message);
      continue;
    }
    const bool too_often = interrupted_runs >= k_max_interrupted_runs;
    const bool requeue = settings_.serve.on_restart == config::OnRestart::requeue && !too_often;
    trigger.status = requeue ? TriggerStatus::queued : TriggerStatus::failed;
    trigger.message = requeue ? "requeued: the server stopped while it ran"
                      : too_often
                          ? fmt::format(
                                "the server stopped while it ran; {} runs were interrupted, "
                                "so it is not requeued again",
                                interrupted_runs)
                          : "the server stopped while it ran";
    trigger.updated_at = 0;
    KILN_TRY_VOID(store_.update_trigger(trigger));
    spdlog::info("trigger {}: left running by a server that stopped: {}", trigger.id,
                 requeue ? "requeued" : "failed");
    if (requeue) enqueue(trigger.id);
  }
  return !orphans.empty();
}

Status RunQueue::start() {
  KILN_TRY(auto interrupted, store_.mark_interrupted(store::now_ms()));
  (void)interrupted;
  KILN_TRY_VOID(store_.beat(0));
  KILN_TRY(bool recovered, recover_orphans());
  // The dead server's job processes were killed by its watchdog; its GPU leases and
  // containers are reclaimed here, before anything runs again.
  reclaim_dead_owners(settings_.base, recovered, settings_.base.container_engine);
  KILN_TRY(auto queued, store_.list_triggers(TriggerStatus::queued, 0));
  {
    MutexLock lock(mutex_);
    for (auto it = queued.rbegin(); it != queued.rend(); ++it)
      if (std::find(queue_.begin(), queue_.end(), it->id) == queue_.end()) queue_.push_back(it->id);
  }
  for (int i = 0; i < settings_.serve.max_concurrent_runs; ++i)
    workers_.emplace_back([this] { work(); });
  keep_alive_ = std::thread([this] { keep_alive(); });
  hooks_.start();
  return {};
}

void RunQueue::keep_alive() {
  while (true) {
    {
      MutexLock lock(mutex_);
      if (changed_.wait_for(lock.native(), k_beat_interval,
                            [&]() REQUIRES(mutex_) { return stopping_; }))
        return;
    }
    if (auto beat = store_.beat(0); !beat) spdlog::error("heartbeat: {}", beat.error().message);
    (void)store_.mark_interrupted(store::now_ms());
    {
      MutexLock lock(mutex_);
      if (!taking_) continue;
    }
    if (auto recovered = recover_orphans(); !recovered)
      spdlog::error("recovering triggers: {}", recovered.error().message);
    else if (*recovered)
      reclaim_dead_owners(settings_.base, true, settings_.base.container_engine);
    // The queued triggers of every replica: whichever worker claims one first runs it.
    auto queued = store_.list_triggers(TriggerStatus::queued, 0);
    if (!queued) continue;
    bool added = false;
    {
      MutexLock lock(mutex_);
      for (auto it = queued->rbegin(); it != queued->rend(); ++it) {
        if (std::find(queue_.begin(), queue_.end(), it->id) != queue_.end()) continue;
        if (active_.contains(it->id)) continue;
        queue_.push_back(it->id);
        added = true;
      }
    }
    if (added) changed_.notify_all();
  }
}

void RunQueue::enqueue(std::int64_t trigger_id) {
  {
    MutexLock lock(mutex_);
    queue_.push_back(trigger_id);
  }
  // All: keep_alive() waits on changed_ too, and a notify_one that woke it would leave every
  // worker asleep.
  changed_.notify_all();
}

Status RunQueue::approve(std::int64_t trigger_id, const std::string& who) {
  KILN_TRY(auto trigger, store_.get_trigger(trigger_id));
  if (trigger.status != TriggerStatus::waiting_approval)
    return fail(ErrorCode::invalid_input, "trigger {} is {}, not waiting for approval", trigger_id,
                store::to_string(trigger.status));
  trigger.status = TriggerStatus::queued;
  trigger.message = fmt::format("approved by {}", who);
  trigger.updated_at = 0;
  KILN_TRY_VOID(store_.update_trigger(trigger));
  enqueue(trigger_id);
  return {};
}

Status RunQueue::cancel_trigger(std::int64_t trigger_id) {
  KILN_TRY(auto trigger, store_.get_trigger(trigger_id));
  MutexLock lock(mutex_);
  if (auto it = active_.find(trigger_id); it != active_.end()) {
    it->second.cancel->store(true);
    return {};
  }
  if (trigger.status != TriggerStatus::queued && trigger.status != TriggerStatus::waiting_approval)
    return fail(ErrorCode::invalid_input, "trigger {} is {}: nothing to cancel", trigger_id,
                store::to_string(trigger.status));
  trigger.status = TriggerStatus::cancelled;
  trigger.message = "cancelled before it ran";
  trigger.updated_at = 0;
  cancelled_before_start_.insert(trigger_id);
  return store_.update_trigger(trigger);
}

bool RunQueue::cancel_run(std::int64_t run_id) {
  MutexLock lock(mutex_);
  for (auto& [id, active] : active_) {
    if (active.run_ids.contains(run_id)) {
      active.cancel->store(true);
      return true;
    }
  }
  return false;
}

void RunQueue::stop_taking() {
  {
    MutexLock lock(mutex_);
    taking_ = false;
  }
  changed_.notify_all();
  hooks_.stop();
}

bool RunQueue::wait_idle(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mutex_);
  return changed_.wait_until(lock.native(), deadline,
                             [&]() REQUIRES(mutex_) { return active_.empty(); });
}

void RunQueue::cancel_all() {
  MutexLock lock(mutex_);
  for (auto& [id, active] : active_) active.cancel->store(true);
}

int RunQueue::running() const {
  MutexLock lock(mutex_);
  return static_cast<int>(active_.size());
}

int RunQueue::running_runs() const {
  MutexLock lock(mutex_);
  std::size_t runs = 0;
  for (const auto& [id, active] : active_) runs += active.run_ids.size();
  return static_cast<int>(runs);
}

void RunQueue::work() {
  while (true) {
    std::int64_t trigger_id = 0;
    {
      MutexLock lock(mutex_);
      changed_.wait(lock.native(),
                    [&]() REQUIRES(mutex_) { return stopping_ || !taking_ || !queue_.empty(); });
      if (!taking_ || stopping_) return;
      trigger_id = queue_.front();
      queue_.pop_front();
      if (cancelled_before_start_.erase(trigger_id)) continue;
      active_[trigger_id] = {std::make_shared<std::atomic<bool>>(false), {}};
      hooks_.touch();  // with the change the idle watcher sees (idle_hooks.h)
    }
    hooks_.before_work();  // serve.busy, when this ends an idle spell
    execute(trigger_id);
    {
      MutexLock lock(mutex_);
      active_.erase(trigger_id);
      hooks_.touch();
    }
    changed_.notify_all();
  }
}

Result<fs::path> RunQueue::prepare_checkout(const Trigger& trigger,
                                            const config::ServeRepository& repository) {
  // repos/OWNER/NAME.git: the name the engine derives from the checkout's origin is OWNER/NAME.
  const fs::path bare = settings_.work_dir / "repos" / (repository.name + ".git");
  const fs::path checkout = settings_.work_dir / "checkouts" / std::to_string(trigger.id);
  MutexLock lock(git_mutex_);
  std::error_code ec;
  if (!fs::exists(bare / "HEAD", ec)) {
    fs::create_directories(bare, ec);
    KILN_TRY_VOID(git(bare, {"init", "--quiet", "--bare"}));
  }
  // Deliveries of a busy branch (and re-runs) name commits the clone has already: fetching
  // only for a missing commit keeps the one-fetch-at-a-time lock short under load.
  if (!git(bare, {"cat-file", "-e", trigger.sha + "^{commit}"})) {
    KILN_TRY_VOID(git(bare, {"fetch", "--quiet", "--no-tags", repository.clone_url,
                             "+" + trigger.ref + ":" + local_ref(trigger.ref)}));
    // The ref may have moved on since the event: fetch the commit itself when it is missing.
    if (!git(bare, {"cat-file", "-e", trigger.sha + "^{commit}"}))
      KILN_TRY_VOID(
          git(bare, {"fetch", "--quiet", "--no-tags", repository.clone_url, trigger.sha}));
  }
  fs::remove_all(checkout, ec);
  fs::create_directories(checkout.parent_path(), ec);
  KILN_TRY_VOID(git(settings_.work_dir, {"clone", "--quiet", "--shared", "--no-checkout",
                                         bare.string(), checkout.string()}));
  KILN_TRY_VOID(git(checkout, {"checkout", "--quiet", "--detach", trigger.sha}));
  return checkout;
}

void RunQueue::execute(std::int64_t trigger_id) {
  auto loaded = store_.get_trigger(trigger_id);
  if (!loaded) {
    spdlog::error("trigger {}: {}", trigger_id, loaded.error().message);
    return;
  }
  Trigger trigger = std::move(*loaded);
  if (trigger.status != TriggerStatus::queued) return;  // cancelled meanwhile, or a duplicate
  // Of several replicas (or workers) holding it, the one that claims it runs it.
  if (auto claimed = store_.claim_trigger(trigger_id); !claimed || !*claimed) return;
  auto finish = [&](TriggerStatus status, std::string message) {
    trigger.status = status;
    trigger.message = std::move(message);
    trigger.updated_at = 0;
    if (auto updated = store_.update_trigger(trigger); !updated)
      spdlog::error("trigger {}: {}", trigger.id, updated.error().message);
    spdlog::info("trigger {} {}: {}", trigger.id, store::to_string(status), trigger.message);
  };
  const auto* repository = find_repository(settings_.serve, trigger.repository);
  if (!repository) return finish(TriggerStatus::failed, "the repository is no longer configured");
  trigger.status = TriggerStatus::running;
  trigger.updated_at = 0;
  if (auto updated = store_.update_trigger(trigger); !updated)
    return finish(TriggerStatus::failed, updated.error().message);
  spdlog::info("trigger {}: {} {} {} ({})", trigger.id, trigger.repository, trigger.event,
               trigger.ref, trigger.sha);

  if (trigger.event == "bisect") {
    auto message = bisect(trigger, *repository);
    bool cancelled = false;
    {
      MutexLock lock(mutex_);
      cancelled = active_[trigger.id].cancel->load();
    }
    if (!message)
      return finish(cancelled ? TriggerStatus::cancelled : TriggerStatus::failed,
                    message.error().message);
    return finish(TriggerStatus::finished, *message);
  }
  auto checkout = prepare_checkout(trigger, *repository);
  if (!checkout) return finish(TriggerStatus::failed, checkout.error().message);
  const fs::path event_file = settings_.work_dir / "events" / fmt::format("{}.json", trigger.id);
  {
    std::error_code ec;
    fs::create_directories(event_file.parent_path(), ec);
    std::ofstream out(event_file, std::ios::binary | std::ios::trunc);
    out << trigger.payload.dump();
    if (!out) return finish(TriggerStatus::failed, "cannot write " + event_file.string());
  }

  engine::RunOptions options = settings_.base;
  options.repository = *checkout;
  options.repository_name = trigger.repository;
  options.event_name = trigger.event;
  options.event_file = event_file;
  // A workflow_dispatch, and a schedule's firing, name the one workflow file they run.
  if ((trigger.event == "workflow_dispatch" || trigger.event == "schedule") &&
      trigger.payload.is_object()) {
    auto workflow = trigger.payload.find("workflow");
    if (workflow != trigger.payload.end() && workflow->is_string())
      options.workflows = *checkout / workflow->get<std::string>();
  }
  options.concurrency = settings_.concurrency;
  if (trigger.rerun.is_object())  // POST /api/runs/ID/rerun (run_routes.cpp)
    options.rerun = engine::RunOptions::Rerun{trigger.rerun.value("run", std::int64_t{0}),
                                              trigger.rerun.value("failed_only", false)};
  // Under the server's prefix, so that its watchdog finds the jobs if the server dies.
  options.job_token_prefix =
      settings_.base.job_token_prefix.empty()
          ? exec::new_job_token()
          : fmt::format("{}-t{}", settings_.base.job_token_prefix, trigger.id);
  {
    MutexLock lock(mutex_);
    options.cancel = active_[trigger.id].cancel;
  }
  const std::string trigger_url =
      fmt::format("{}/api/triggers/{}", settings_.public_url, trigger.id);
  ServeObserver observer(store_, trigger, *repository, settings_.public_url, trigger_url,
                         commit_of(*checkout, trigger.sha), [&](std::int64_t run_id) {
                           MutexLock lock(mutex_);
                           active_[trigger.id].run_ids.insert(run_id);
                         });
  auto report = engine::run(options, store_, observer);
  trigger.run_ids = observer.run_ids();
  std::error_code ec;
  fs::remove_all(*checkout, ec);
  if (!report) return finish(TriggerStatus::failed, report.error().to_string());
  bool cancelled = options.cancel->load();
  // serve.bisect.on_regression: each regressed job gets its bisection (bisect.h).
  if (settings_.serve.bisect.on_regression && !cancelled)
    for (auto id : request_bisections(store_, trigger, *report)) enqueue(id);
  std::string message =
      report->runs.empty()
          ? "no workflow is triggered by this event"
          : fmt::format("{} run(s), {}", report->runs.size(),
                        report->exit_code() == 0 ? "all succeeded" : "a job failed");
  finish(cancelled ? TriggerStatus::cancelled : TriggerStatus::finished, message);
}

}  // namespace kiln::server
