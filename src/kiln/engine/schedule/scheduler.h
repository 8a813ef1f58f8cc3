#pragma once
// The scheduler: a single-threaded state machine that turns the selected workflows into job
// instances as their needs finish, starts them through the Executor up to --max-parallel, and
// applies `if:`, fail-fast, strategy.max-parallel, concurrency groups, cancels and re-runs. It
// makes no thread, store, OS or clock call of its own: jobs go out through the Executor, GPUs
// come from the Placer, rows are written by the RunRecorder and time is read from the Clock.
// Whoever drives it (engine::run, or a test) feeds it events — a job finished, a concurrency
// group was granted or cancelled by another engine call, Ctrl-C — and calls advance().
// Defined across scheduler.cpp (starting, events, progress), scheduler_resolve.cpp (a job's
// `if`, instances and calls), scheduler_finish.cpp (results), scheduler_cancel.cpp
// (concurrency groups and cancels), scheduler_gpus.cpp (GPU placement) and scheduler_queue.cpp
// (the order of the queue: priority classes, queue time).

#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/engine/clock.h"
#include "kiln/engine/engine.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/engine/place/placer.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/engine/schedule/gpu_queue.h"
#include "kiln/engine/schedule/queue_timer.h"
#include "kiln/gpu/request.h"
#include "kiln/store/records.h"

namespace kiln::engine {

struct WorkflowState;
struct Node;

// A run's or job's place in a concurrency group (plan::ConcurrencyGroups decides).
struct GroupClaim {
  std::string id;     // unique in this invocation: "run:3", "job:17"
  std::string group;  // evaluated; empty: no group
  bool cancel_in_progress = false;
  bool requested = false;
  bool granted = false;
};

struct Instance {
  PlannedInstance planned;
  struct Node* node = nullptr;
  std::int64_t job_row = 0;
  enum class State { queued, running, done } state = State::queued;
  JobId id = 0;                    // the Executor's, while it runs
  StopReason stop;                 // why the scheduler cancelled it, if it did
  GroupClaim claim;                // job-level concurrency group
  bool continue_on_error = false;  // job-level, evaluated with the instance's matrix
  std::vector<std::string> labels;
  gpu::GpuRequest gpu_request;     // from the labels; wants_gpus() false: none
  std::vector<gpu::GpuInfo> gpus;  // the GPUs leased to it while it runs
  std::string token;               // its KILN_JOB_TOKEN, set when it is placed
  SourceLocation gpu_where;        // the runs-on label that asks for GPUs, for messages
  bool said_waiting = false;       // "waiting for GPUs" is printed once
  bool said_outranked = false;     // and "waiting for a higher class" too
  int priority_rank = 0;           // its class's (kiln.yml priority:), before aging
  QueueTimer queue;                // since when it waits, and why
  bool reused = false;             // a re-run took it over from the earlier attempt
  bool on_slurm = false;           // sent to a Slurm pool: no local slot, no local GPUs
  JobSummary summary;
};

// One call of a reusable workflow: an instance of a caller job (one per matrix combination)
// whose called jobs run as nodes of the caller's run, keyed "caller / job".
struct CallScope {
  Node* caller = nullptr;
  std::string key_prefix;                      // "call / ", "call (linux) / ", "outer / inner / "
  std::string name_prefix;                     // the same with display names
  const SelectedWorkflow* workflow = nullptr;  // the called file
  expr::Value base_contexts;                   // github, inputs, secrets, vars
  std::vector<std::pair<std::string, std::string>> env;  // the called workflow's env
  GroupClaim claim;                                      // the caller job's concurrency
  bool cancelled = false;  // by a newer call in the caller's concurrency group
  std::vector<Node*> nodes;
  int level = 2;  // the triggered workflow is level 1
};

struct Node {
  const workflow::Job* job = nullptr;
  WorkflowState* workflow = nullptr;
  CallScope* scope = nullptr;     // the call whose job this is; null: the triggered workflow's
  std::vector<CallScope*> calls;  // a caller job's calls, once planned
  enum class State { waiting, planned, done } state = State::waiting;
  PlannedJob plan;
  std::list<Instance> instances;  // stable addresses
  int running = 0;
  Conclusion result = Conclusion::skipped;
  bool ancestor_failed = false;  // for failure() in a job-level if
  std::map<std::string, std::string> outputs;
  // Re-run of failed jobs: every job it needs (and its call's caller) was reused, so its own
  // instances that succeeded in the earlier attempt may be reused too; `reused` once all were.
  bool inputs_reused = false;
  bool reused = false;
};

struct WorkflowState {
  const SelectedWorkflow* selected = nullptr;
  store::Run run;
  std::vector<std::unique_ptr<Node>> nodes;              // file order, only the jobs to run
  expr::Value base_contexts;                             // github, inputs, vars, secrets
  std::vector<std::pair<std::string, std::string>> env;  // evaluated workflow env
  GroupClaim claim;                                      // workflow-level concurrency group
  bool cancelled = false;  // by a newer run of its concurrency group, or Ctrl-C
  std::chrono::steady_clock::time_point started;
  std::vector<JobSummary> finished;
  std::vector<std::unique_ptr<CallScope>> scopes;
  std::string shown_prefix;  // "ci/" when another workflow of the run has a job of the same id
};

// What the scheduler drives and is driven by (scheduler.h's header comment).
struct SchedulerSeams {
  Executor& executor;
  ExecutorEvents& events;  // where the executor reports (the driver's queue)
  Placer& placer;
  RunRecorder& recorder;
  const Clock& clock;
  RunObserver& observer;         // masked (record/masking.h)
  ConcurrencyRegistry& groups;   // shared with other engine calls of the process, or not
  int group_owner = 0;           // this call's ConcurrencyRegistry::join id
  int max_parallel = 1;          // --max-parallel, resolved
  std::string job_token_prefix;  // every job's KILN_JOB_TOKEN is this, '-', its row id
};

class Scheduler final {
 public:
  // The selection (and the workflows it holds) must outlive the scheduler.
  Scheduler(const RunOptions& options, const RepositoryInfo& repo, const plan::Event& event,
            SchedulerSeams seams);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Makes this a re-run of `earlier` (RunOptions::rerun); with failed_only, `earlier_jobs`
  // are the jobs whose successes may be reused.
  void set_rerun(store::Run earlier, const std::vector<store::Job>& earlier_jobs, bool failed_only);

  // Creates a run for each triggered workflow. An error (a run row, dispatch inputs, the
  // workflow's env or concurrency) stops everything before a job starts.
  Status start(const Selection& selection);
  // Resolves every job whose needs are done, starts what may start, reports progress.
  void advance();
  // Events, applied at once; advance() then acts on them.
  void job_finished(JobId id, JobOutcome outcome);
  void cancel_all();  // Ctrl-C, RunOptions::cancel: `always()` jobs still run
  // ConcurrencyRegistry::Listener's decisions of another engine call, as the driver queued them:
  // a claim of this scheduler holds its group now, or was replaced by a newer one.
  void granted(const std::string& id);
  void cancelled(const std::string& id, const std::string& group);

  bool done() const { return all_done(); }
  // Once done(): each run's summary (its status recorded), in the order they started.
  RunReport report();

 private:
  Status start_workflow(const SelectedWorkflow& selected, const std::string& shown_prefix);

  // A job of the same workflow file (and the same call of it) as `from`.
  Node* find_node(WorkflowState& wf, const std::string& id, const Node& from);

  // cancel_all() was called.
  bool cancel_requested() const { return interrupted_; }

  bool all_done() const;

  bool needs_done(WorkflowState& wf, const Node& node);

  // Workflow-level concurrency: a workflow starts no job until it holds its group.
  void acquire_workflow_groups();

  // Asks for a claim's group once; cancels what the answer says. True when the claim holds.
  bool claim(GroupClaim& claim);

  void release(GroupClaim& claim);

  // A claim of this scheduler holds its group now.
  void grant(const std::string& id);

  void cancel_claimant(const std::string& id, const StopReason& reason);
  // A queued instance ends cancelled at once; a running one is asked to stop.
  void cancel_instance(Instance& instance, const StopReason& reason);

  // True when the call a node belongs to, or one around it, was cancelled.
  static bool in_cancelled_call(const CallScope* scope);

  // Cancels one call of a reusable workflow: its jobs (and those of the calls inside it) that
  // are queued or running; the ones still waiting are cancelled when their needs are done.
  void cancel_scope(CallScope& scope, const StopReason& reason);

  bool workflow_done(const WorkflowState& wf) const;

  expr::Value needs_context(WorkflowState& wf, const Node& node);

  // A node whose needs are done: its `if`, then its instances.
  void resolve(WorkflowState& wf, Node& node);

  // The job's place in the needs graph, kept in the job row for the dashboard's job graph
  // (GET /api/runs/ID: "node" and "needs"): its node "prefix + id" and the nodes it needs, in
  // the same scope (a reusable workflow's jobs need jobs of the same call).
  static nlohmann::json graph_of(const Node& node);

  // Re-run of failed jobs: an instance that succeeded in the earlier attempt, with nothing it
  // needs run again, is recorded as succeeded with that job's outputs; the artifacts that job
  // uploaded are linked into this run, so jobs that run again can download them.
  void reuse_instance(WorkflowState& wf, Instance& instance, const store::Job& earlier);

  std::filesystem::path artifact_root(std::int64_t run_id) const;

  // Records a job that never runs (skipped, cancelled before it started, or failed while being
  // planned) as one instance that is finished at once.
  void skip(WorkflowState& wf, Node& node, Conclusion conclusion, const std::string& reason);

  void finish_instance_now(Instance& instance, Conclusion conclusion, const std::string& reason,
                           store::FailureClass failure_class = store::FailureClass::code);

  // Starts queued instances while slots are free: by priority class (aged), first come first
  // served within one (plan order among those queued at once). GPU jobs go through one
  // gpu::QueuePass: the first that must wait reserves its GPUs, later ones backfill around them.
  // A GPU job leaves the GPUs to a job of a higher class that another engine call has waiting
  // (RunOptions::gpu_queue).
  void start_ready();

  // A new instance enters the queue: its priority class, since when it waits.
  void enqueue(WorkflowState& wf, Node& node, Instance& instance);
  // Its class at `now`, after aging.
  int effective_rank(const Instance& instance, std::chrono::steady_clock::time_point now) const;
  // True when another engine call has a job of a higher class waiting for GPUs (said once).
  bool outranked(Instance& instance, int rank, std::chrono::steady_clock::time_point now);
  GpuQueue::Waiter waiter(const Instance& instance) const;

  // The job as the observer shows it: its key, or "workflow/key" (WorkflowState::shown_prefix).
  static std::string shown(const Instance& instance);
  void finished_to_observer(const Instance& instance);

  std::string job_token(const Instance& instance) const;

  // Leases the GPUs an instance asks for, best connected first. False when it must wait; an
  // instance this host can never serve fails at once with the reason.
  bool place_on_gpus(Instance& instance);

  void launch(WorkflowState& wf, Node& node, Instance& instance);

  void on_instance_finished(WorkflowState& wf, Node& node, Instance& instance, JobOutcome outcome);

  void maybe_finish_node(WorkflowState& wf, Node& node);

  // A caller job's instances: one call of the reusable workflow each, whose jobs become nodes
  // of this run (keyed "caller / job") that start as their own needs allow.
  void start_calls(WorkflowState& wf, Node& node, const expr::Context& context, PlannedJob planned);

  // A caller job is done when every job of each of its calls is: it failed when one of them
  // failed, and its outputs are the called workflow's (the last call to set one wins).
  void maybe_finish_caller(WorkflowState& wf, Node& node);

  void cancel_workflow(WorkflowState& wf, const StopReason& reason);

  void cancel_everything(const StopReason& reason);

  void report_progress();

  WorkflowRunSummary finish_workflow(WorkflowState& wf);

  const RunOptions& options_;
  const RepositoryInfo& repo_;
  const plan::Event& event_;
  SchedulerSeams seams_;
  RunObserver& observer_;
  RunRecorder& recorder_;
  std::filesystem::path kiln_dir_;
  int max_parallel_ = 1;

  std::vector<std::unique_ptr<WorkflowState>> workflows_;
  int running_ = 0;  // jobs on this host (not those Slurm runs), against max_parallel_
  int finished_count_ = 0;
  bool interrupted_ = false;  // cancel_all()
  JobId next_job_id_ = 0;
  std::map<JobId, Instance*> launched_;  // running instances, by Executor id
  std::vector<std::pair<std::string, std::string>> not_triggered_;  // Selection::not_triggered
  std::map<std::string, Instance*> instance_claims_;
  std::map<std::string, WorkflowState*> workflow_claims_;
  std::map<std::string, CallScope*> scope_claims_;
  std::map<std::string, std::unique_ptr<SelectedWorkflow>> called_;  // by `uses:` text
  std::map<std::string, std::string> unresolved_;                    // Selection::unresolved
  int gpu_queue_owner_ = 0;  // this call's GpuQueue::join id (RunOptions::gpu_queue)
  int last_done_ = -1;
  std::vector<std::string> last_running_;
  std::optional<store::Run> earlier_;           // the run this one repeats (a re-run)
  std::map<std::string, store::Job> reusable_;  // its succeeded jobs, by key (failed_only)
};

}  // namespace kiln::engine
