// engine::run: plans the runs an event triggers and drives the scheduler's state machine with
// the real seams — the host Executor (a thread per job), the HostPlacer, the StoreRunRecorder
// and the system clock. Job threads and other engine calls (concurrency groups) only queue
// events here; the scheduler is touched by this thread alone.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "kiln/core/thread_annotations.h"
#include "kiln/engine/clock.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/execute/host_executor.h"
#include "kiln/engine/execute/slurm_executor.h"
#include "kiln/engine/place/placer.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/record/masking.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/engine/schedule/retry_policy.h"
#include "kiln/engine/schedule/scheduler.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/store/store.h"

namespace kiln::engine {
namespace {

std::atomic<bool> g_cancel_requested{false};

// The scheduler's inbox: what job threads and other engine calls tell it, in order.
class EventQueue final : public ExecutorEvents, public ConcurrencyRegistry::Listener {
 public:
  explicit EventQueue(RunObserver& observer) : observer_(observer) {}

  struct Finished {
    JobId id;
    JobOutcome outcome;
  };
  struct Granted {
    std::string id;
  };
  struct Cancelled {
    std::string id, group;
  };
  using Event = std::variant<Finished, Granted, Cancelled>;

  // Lines go straight to the (thread-safe) observer: the scheduler has no part in them.
  void line(JobId, const std::string& shown_key, std::string_view kind,
            std::string_view text) override {
    observer_.job_line(shown_key, kind, text);
  }
  void lines(JobId, const std::string& shown_key, std::span<const ShownLine> lines) override {
    observer_.job_lines(shown_key, lines);
  }
  void finished(JobId id, JobOutcome outcome) override { push(Finished{id, std::move(outcome)}); }
  void granted(const std::string& id) override { push(Granted{id}); }
  void cancelled(const std::string& id, const std::string& group) override {
    push(Cancelled{id, group});
  }

  // The events so far; waits up to `timeout` for one when there is none.
  std::deque<Event> take(std::chrono::milliseconds timeout) EXCLUDES(mutex_) {
    kiln::MutexLock lock(mutex_);
    if (events_.empty())
      arrived_.wait_for(lock.native(), timeout,
                        [&]() REQUIRES(mutex_) { return !events_.empty(); });
    std::deque<Event> events;
    events.swap(events_);
    return events;
  }

 private:
  void push(Event event) EXCLUDES(mutex_) {
    {
      kiln::MutexLock lock(mutex_);
      events_.push_back(std::move(event));
    }
    arrived_.notify_one();
  }

  RunObserver& observer_;
  kiln::Mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Event> events_ GUARDED_BY(mutex_);
};

// Everything (request_cancel) or only this run (RunOptions::cancel) is to be cancelled.
bool cancel_requested(const RunOptions& options) {
  return g_cancel_requested || (options.cancel && options.cancel->load());
}

// Drives one scheduler until every job is done.
Result<RunReport> drive(const RunOptions& options, const RepositoryInfo& repo,
                        const plan::Event& event, const Selection& selection, store::Store& store,
                        RunObserver& outer_observer, std::optional<store::Run> earlier,
                        const std::vector<store::Job>& earlier_jobs) {
  exec::Masker masker;
  for (const auto& [name, value] : options.secrets) masker.add(value);
  // The run's one masking point (masking.h): every write and report of the run goes through it.
  MaskingStore masked_store(store, masker);
  MaskingObserver observer(outer_observer, masker);
  SystemClock clock;
  StoreRunRecorder recorder(masked_store, clock,
                            [&observer](const std::string& text) { observer.warning(text); });
  HostPlacer placer(options, masker);
  EventQueue queue(observer);
  // `kiln serve` shares one registry between its engine calls; `kiln run` has its own.
  auto groups = options.concurrency ? options.concurrency : std::make_shared<ConcurrencyRegistry>();
  const int owner = groups->join(queue);
  Result<RunReport> result;
  {
    HostExecutor executor({.options = &options,
                           .repo = &repo,
                           .event = &event,
                           .store = &masked_store,
                           .recorder = &recorder,
                           .masker = &masker,
                           .gpus = &placer.supervisor(),
                           .kiln_dir = repo.root / ".kiln"});
    // kiln.yml slurm: the jobs of its pools go to Slurm, the others stay on this host.
    std::optional<SlurmExecutor> slurm;
    std::optional<LabelRouter> router;
    if (options.slurm) {
      slurm.emplace(SlurmExecutorContext{.options = &options,
                                         .repo = &repo,
                                         .event = &event,
                                         .recorder = &recorder,
                                         .kiln_dir = repo.root / ".kiln"});
      router.emplace(*options.slurm, executor, *slurm);
    }
    SchedulerSeams seams{
        .executor = router ? static_cast<Executor&>(*router) : executor,
        .events = queue,
        .placer = placer,
        .recorder = recorder,
        .clock = clock,
        .observer = observer,
        .groups = *groups,
        .group_owner = owner,
        .max_parallel = options.max_parallel > 0
                            ? options.max_parallel
                            : static_cast<int>(std::thread::hardware_concurrency()),
        .job_token_prefix =
            options.job_token_prefix.empty() ? exec::new_job_token() : options.job_token_prefix};
    Scheduler scheduler(options, repo, event, seams);
    if (earlier) scheduler.set_rerun(std::move(*earlier), earlier_jobs, options.rerun->failed_only);
    if (auto started = scheduler.start(selection); !started) {
      result = std::unexpected(started.error());
    } else {
      while (true) {
        if (cancel_requested(options)) scheduler.cancel_all();
        scheduler.advance();
        if (scheduler.done()) break;
        for (auto& next : queue.take(std::chrono::milliseconds(100))) {
          if (auto* finished = std::get_if<EventQueue::Finished>(&next))
            scheduler.job_finished(finished->id, std::move(finished->outcome));
          else if (auto* granted = std::get_if<EventQueue::Granted>(&next))
            scheduler.granted(granted->id);
          else if (auto* cancelled = std::get_if<EventQueue::Cancelled>(&next))
            scheduler.cancelled(cancelled->id, cancelled->group);
        }
      }
      RunReport report = scheduler.report();
      mask_report(masker, report);
      result = std::move(report);
    }
  }  // the executor joins its job threads here
  groups->leave(owner);
  return result;
}

}  // namespace

void request_cancel() { g_cancel_requested = true; }

int RunReport::exit_code() const {
  for (const auto& run : runs)
    if (run.conclusion != Conclusion::success) return 1;
  return 0;
}

namespace {

Result<RunReport> run_once(const RunOptions& options, store::Store& store, RunObserver& observer) {
  KILN_TRY(auto repo, inspect_repository(options.repository));
  // The working copy runs, as act runs it: the workflows are read from the work tree, so
  // actions/checkout gives the work tree too, uncommitted changes included, and says so.
  KILN_TRY(repo.work_tree_sha, snapshot_work_tree(repo));
  if (!repo.work_tree_sha.empty())
    observer.warning(fmt::format(
        "the work tree has uncommitted changes: this run uses them (the workflow files as they "
        "are, and actions/checkout of {} gives snapshot {} of the work tree); commit them to run "
        "HEAD alone",
        repo.head_sha.substr(0, 12), repo.work_tree_sha.substr(0, 12)));
  // A re-run runs the earlier run's workflow file again.
  RunOptions effective = options;
  std::optional<store::Run> earlier;
  std::vector<store::Job> earlier_jobs;
  if (options.rerun) {
    KILN_TRY(earlier, store.get_run(options.rerun->run_id));
    KILN_TRY(earlier_jobs, store.list_jobs(earlier->id));
    if (!effective.workflows) {
      std::filesystem::path path = earlier->workflow_path;
      effective.workflows = path.is_absolute() ? path : repo.root / path;
    }
  }
  KILN_TRY(auto event, make_event(effective, repo));
  KILN_TRY(auto selection, select_workflows(effective, repo, event));
  if (workflow::has_errors(selection.diagnostics))
    return std::unexpected(diagnostics_error(selection.diagnostics));
  for (const auto& diagnostic : selection.diagnostics) observer.warning(diagnostic.to_string());
  return drive(effective, repo, event, selection, store, observer, std::move(earlier),
               earlier_jobs);
}

}  // namespace

// kiln.yml retry: (retry_policy.h): a run failed only for classes with retries left runs again
// as its next attempt (github.run_attempt), its failed jobs only, as `kiln rerun --failed` runs
// it. The faulty GPUs were quarantined by the after-job check, so the retry is placed on others.
// Each earlier attempt stays a run of its own in the store, and in the report's `retried`.
Result<RunReport> run(const RunOptions& options, store::Store& store, RunObserver& observer) {
  KILN_TRY(auto report, run_once(options, store, observer));
  for (auto& last : report.runs) {
    RetryCounts used;
    while (!cancel_requested(options)) {
      auto why = retry_reason(last, options.retry, used);
      if (!why) break;
      observer.warning(
          fmt::format("run {} (attempt {}) failed for the machine, not the code: "
                      "running its failed jobs again as attempt {} ({})",
                      last.run_id, last.attempt, last.attempt + 1, *why));
      RunOptions again = options;
      again.rerun = RunOptions::Rerun{.run_id = last.run_id, .failed_only = true};
      again.workflows.reset();  // the earlier run's own workflow file
      KILN_TRY(auto next, run_once(again, store, observer));
      if (next.runs.size() != 1) break;
      next.runs.front().retry_of = last.run_id;
      next.runs.front().retry_reason = std::move(*why);
      report.retried.push_back(std::exchange(last, std::move(next.runs.front())));
    }
  }
  return report;
}

}  // namespace kiln::engine
