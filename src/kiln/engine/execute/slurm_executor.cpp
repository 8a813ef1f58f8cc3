#include "kiln/engine/execute/slurm_executor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/core/subprocess.h"
#include "kiln/engine/execute/job_runner.h"
#include "kiln/engine/execute/slurm_job.h"

namespace kiln::engine {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

// The slack between kiln's own job timeout and Slurm's --time, so that kiln's comes first and the
// job ends as a timeout with its log, not as a Slurm kill.
constexpr int k_time_slack_minutes = 5;
constexpr int k_default_timeout_minutes = 360;
// How long a Slurm job may be gone before its outcome shows up (a shared file system's cache).
constexpr auto k_outcome_grace = std::chrono::seconds(10);
// How long a cancelled job's agent has to stop its steps before scancel kills the job.
constexpr auto k_cancel_grace = std::chrono::seconds(30);

// 'text' for sh, for sbatch --wrap.
std::string sh_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// The job's timeout-minutes when it is a number; expressions are the job runner's (it still
// applies them), Slurm then gets the default.
int timeout_minutes_of(const JobSpec& spec) {
  const auto* job = spec.workflow.workflow.find_job(spec.job_id);
  if (!job || !job->timeout_minutes) return k_default_timeout_minutes;
  const std::string& text = job->timeout_minutes->value;
  double minutes = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), minutes);
  if (ec != std::errc() || end != text.data() + text.size() || minutes <= 0)
    return k_default_timeout_minutes;
  return static_cast<int>(minutes + 0.999);
}

std::string safe_name(const std::string& text) {
  std::string out;
  for (char c : text)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_') ? c : '_';
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_squeue_states(const std::string& text) {
  std::map<std::string, std::string> states;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string id, state;
    if (words >> id) {
      words >> state;
      states[id] = state;
    }
  }
  return states;
}

bool slurm_state_ended(const std::string& state) {
  static const std::set<std::string> ended = {
      "BOOT_FAIL",     "CANCELLED", "COMPLETED", "DEADLINE", "FAILED",      "NODE_FAIL",
      "OUT_OF_MEMORY", "PREEMPTED", "REVOKED",   "TIMEOUT",  "SPECIAL_EXIT"};
  return ended.contains(state);
}

std::string slurm_cluster_end(const std::string& state) {
  if (state == "NODE_FAIL") return "its node failed (NODE_FAIL)";
  if (state == "PREEMPTED") return "Slurm preempted it (PREEMPTED)";
  if (state == "BOOT_FAIL") return "its node failed to boot (BOOT_FAIL)";
  return {};
}

Result<std::vector<std::string>> sbatch_arguments(const config::SlurmPool& pool,
                                                  const JobSpec& spec, int timeout_minutes) {
  std::vector<std::string> args = {"--parsable"};
  KILN_TRY(auto gres, pool.gres_of(spec.gpu_request));
  if (!gres.empty()) args.push_back("--gres=" + gres);
  KILN_TRY(auto constraint, pool.constraint_of(spec.gpu_request));
  if (!constraint.empty()) args.push_back("--constraint=" + constraint);
  args.push_back(fmt::format("--time={}", timeout_minutes + k_time_slack_minutes));
  if (!pool.partition.empty()) args.push_back("--partition=" + pool.partition);
  if (!pool.account.empty()) args.push_back("--account=" + pool.account);
  if (!pool.qos.empty()) args.push_back("--qos=" + pool.qos);
  if (pool.exclusive) args.push_back("--exclusive");
  // A job Slurm requeued itself would run the same job row again; kiln's retry makes a new attempt.
  args.push_back("--no-requeue");
  const std::string& key = spec.shown_key.empty() ? spec.instance.key : spec.shown_key;
  args.push_back(fmt::format("--job-name=kiln-{}-{}", spec.run_id, safe_name(key)));
  args.push_back(fmt::format("--comment=kiln run {} attempt {} job {} (row {})", spec.run_id,
                             spec.run_attempt, key, spec.job_row));
  for (const auto& extra : pool.sbatch_args) args.push_back(extra);
  return args;
}

struct SlurmExecutor::Job {
  Job(JobId job_id, JobSpec job_spec, ExecutorEvents& job_events)
      : id(job_id), spec(std::move(job_spec)), events(job_events), observer(job_id, job_events) {}
  JobId id;
  JobSpec spec;
  ExecutorEvents& events;
  ExecutorLineObserver observer;
  fs::path dir;               // the job's spool directory
  std::string slurm_id;       // sbatch's job id
  bool cancel_asked = false;  // cancel() was called: scancel it (the watcher does)
  bool scancelled = false;
  StopReason cancel_reason;
  std::optional<SteadyClock::time_point> gone_since;     // squeue no longer lists it
  std::optional<SteadyClock::time_point> scancel_at;     // the agent was sent SIGTERM
  std::optional<SteadyClock::time_point> outcome_since;  // the agent's outcome appeared
  std::string state;                                     // Slurm's, as squeue last listed it
  bool done = false;
};

SlurmExecutor::SlurmExecutor(SlurmExecutorContext context) : context_(std::move(context)) {
  watcher_ = std::thread([this] { watch(); });
}

SlurmExecutor::~SlurmExecutor() {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
}

std::string SlurmExecutor::command(const std::string& name) const {
  const auto& bin = context_.options->slurm->bin_dir;
  return bin.empty() ? name : (bin / name).string();
}

void SlurmExecutor::finish(Job& job, JobOutcome outcome) {
  {
    kiln::MutexLock lock(mutex_);
    job.done = true;
  }
  job.events.finished(job.id, std::move(outcome));
}

void SlurmExecutor::start(JobId id, JobSpec spec, ExecutorEvents& events) {
  auto owned = std::make_unique<Job>(id, std::move(spec), events);
  Job& job = *owned;
  const JobSpec& s = job.spec;
  const config::SlurmConfig& slurm = *context_.options->slurm;
  const std::string shown = s.shown_key.empty() ? s.instance.key : s.shown_key;

  // A job that cannot be submitted fails as any job kiln could not run.
  auto fail = [&](const std::string& why) {
    JobSetup setup;
    setup.observer = &job.observer;
    setup.recorder = context_.recorder;
    setup.job = s.workflow.workflow.find_job(s.job_id);
    setup.job_row = s.job_row;
    setup.instance = s.instance;
    setup.labels = s.labels;
    std::string reason = "infrastructure failure: " + why;
    JobSummary summary = fail_job(setup, reason);
    events.finished(id, {std::move(summary), {StopReason::Kind::infrastructure, reason}});
  };

  const config::SlurmPool* pool = slurm.pool_for(s.labels);
  if (!pool) return fail("no Slurm pool of kiln.yml takes this job's labels");
  auto args = sbatch_arguments(*pool, s, timeout_minutes_of(s));
  if (!args) return fail(args.error().message);
  if (context_.options->agent_store.empty())
    return fail("the Slurm agent has no store to write to (RunOptions::agent_store)");

  job.dir =
      slurm.spool / safe_name(s.job_token.empty() ? fmt::format("job-{}", s.job_row) : s.job_token);
  std::error_code ec;
  fs::create_directories(job.dir, ec);
  if (ec)
    return fail(fmt::format("cannot make the Slurm spool directory {}: {}", job.dir.string(),
                            ec.message()));
  ::chmod(job.dir.c_str(), 0700);
  SlurmJobFile file{.spec = s,
                    .options = *context_.options,
                    .repo = *context_.repo,
                    .event = *context_.event,
                    .store = context_.options->agent_store,
                    .kiln_dir = context_.kiln_dir,
                    .bin_dir = slurm.bin_dir,
                    .simulate_gpus = slurm.simulate_gpus};
  if (auto written = write_json_file(job.dir / "job.json", to_json(file), 0600); !written)
    return fail(written.error().message);

  fs::path agent = slurm.agent;
  if (agent.empty()) {
    agent = fs::read_symlink("/proc/self/exe", ec);
    if (ec) agent = "/proc/self/exe";
  }
  std::vector<std::string> argv = {command("sbatch")};
  argv.insert(argv.end(), args->begin(), args->end());
  argv.push_back("--output=" + (job.dir / "slurm-%j.out").string());
  argv.push_back("--chdir=" + job.dir.string());
  argv.push_back("--wrap=exec " + sh_quote(agent.string()) + " agent " +
                 sh_quote((job.dir / "job.json").string()));
  auto submitted = core::run_command(argv, {}, std::nullopt, std::chrono::minutes(2));
  if (!submitted) return fail("sbatch: " + submitted.error().message);
  if (!submitted->ok()) {
    std::string why = submitted->err.empty() ? submitted->out : submitted->err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return fail(fmt::format("Slurm refused the job: {} ({})", why, submitted->status.to_string()));
  }
  std::string id_text = submitted->out.substr(0, submitted->out.find_first_of(";\n"));
  if (id_text.empty() || !std::all_of(id_text.begin(), id_text.end(), ::isdigit))
    return fail(fmt::format("sbatch --parsable printed no job id: '{}'", submitted->out));
  job.slurm_id = id_text;
  events.line(id, shown, "kiln",
              fmt::format("submitted to Slurm: job {}{} ({})", job.slurm_id,
                          pool->partition.empty() ? "" : ", partition " + pool->partition,
                          fmt::join(*args, " ")));
  kiln::MutexLock lock(mutex_);
  jobs_[id] = std::move(owned);
}

void SlurmExecutor::cancel(JobId id, const StopReason& reason) {
  kiln::MutexLock lock(mutex_);
  if (auto it = jobs_.find(id); it != jobs_.end() && !it->second->done) {
    it->second->cancel_asked = true;
    it->second->cancel_reason = reason;
  }
}

void SlurmExecutor::watch() {
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<Job*> live;
    {
      kiln::MutexLock lock(mutex_);
      for (auto& [id, job] : jobs_)
        if (!job->done) live.push_back(job.get());
    }
    if (live.empty()) continue;
    // Jobs are only added to jobs_ and erased never while the executor lives: the pointers hold.
    std::string ids;
    for (Job* job : live) {
      bool signal = false;
      {
        kiln::MutexLock lock(mutex_);
        signal = job->cancel_asked && !job->scancelled;
        if (signal) job->scancelled = true;
      }
      // First SIGTERM to the agent alone: it cancels the job's steps as Ctrl-C does and writes
      // the outcome; after the grace, scancel ends what is left.
      if (signal) {
        job->scancel_at = SteadyClock::now();
        (void)core::run_command({command("scancel"), "--batch", "--signal=TERM", job->slurm_id});
      } else if (job->scancel_at && SteadyClock::now() - *job->scancel_at > k_cancel_grace) {
        job->scancel_at.reset();
        (void)core::run_command({command("scancel"), job->slurm_id});
      }
      ids += (ids.empty() ? "" : ",") + job->slurm_id;
    }
    // With -t all, squeue lists a job that ended with its end state until slurmctld forgets it
    // (MinJobAge); one it does not list has ended too.
    auto queued =
        core::run_command({command("squeue"), "-h", "-t", "all", "-o", "%i %T", "-j", ids}, {},
                          std::nullopt, std::chrono::minutes(1));
    std::map<std::string, std::string> listed;
    bool known = queued && queued->ok();
    if (known) {
      listed = parse_squeue_states(queued->out);
    } else if (queued && queued->err.find("Invalid job id") != std::string::npos) {
      known = true;  // every one of them has left slurmctld's memory
    }
    for (Job* job : live) {
      auto it = listed.find(job->slurm_id);
      if (it != listed.end() && !it->second.empty()) job->state = it->second;
      const bool ended = known && (it == listed.end() || slurm_state_ended(it->second));
      const fs::path outcome_file = job->dir / "outcome.json";
      std::error_code ec;
      if (fs::exists(outcome_file, ec)) {
        auto json = read_json_file(outcome_file);
        auto summary =
            json ? outcome_from_json(*json) : Result<JobSummary>(std::unexpected(json.error()));
        // When the cluster ends a job (a node failure, a preemption) Slurm signals every process
        // of it, so the agent may still write an outcome: a cancel, a step killed by SIGTERM.
        // Slurm's end state says which it was; it is waited for (briefly: squeue may fail).
        if (summary && !job->scancelled) {
          if (!job->outcome_since) job->outcome_since = SteadyClock::now();
          if (!ended && SteadyClock::now() - *job->outcome_since < k_outcome_grace) continue;
          if (!slurm_cluster_end(job->state).empty()) {
            fail_infra(*job);
            continue;
          }
        }
        if (summary) {
          const JobSpec& s = job->spec;
          summary->key = s.instance.key;
          summary->job_id = s.job_id;
          summary->name = s.instance.name;
          summary->store_id = s.job_row;
          summary->matrix = s.instance.matrix;
          summary->labels = s.labels;
          StopReason stop = stop_reason_of(*summary);
          finish(*job, {std::move(*summary), std::move(stop)});
          continue;
        }
      }
      if (!ended) continue;
      if (!job->gone_since) job->gone_since = SteadyClock::now();
      if (SteadyClock::now() - *job->gone_since < k_outcome_grace) continue;
      if (job->scancelled) {
        // Cancelled, and the agent did not live to say so (killed after KillWait).
        const JobSpec& s = job->spec;
        JobSummary summary;
        summary.key = s.instance.key;
        summary.job_id = s.job_id;
        summary.name = s.instance.name;
        summary.store_id = s.job_row;
        summary.matrix = s.instance.matrix;
        summary.labels = s.labels;
        summary.conclusion = Conclusion::cancelled;
        summary.reason = job->cancel_reason.text;
        summary.failure_class = store::FailureClass::cancelled;
        context_.recorder->finish_job(s.job_row, {.conclusion = Conclusion::cancelled,
                                                  .message = summary.reason,
                                                  .failure_class = summary.failure_class});
        finish(*job, {std::move(summary), job->cancel_reason});
        continue;
      }
      // Gone without the agent's word: the agent, or its node, died.
      fail_infra(*job);
    }
  }
}

// The job ended without the agent's word, or the cluster ended it: an infrastructure failure,
// which the run's retry policy runs again (retry: infra).
void SlurmExecutor::fail_infra(Job& job) {
  JobSetup setup;
  setup.observer = &job.observer;
  setup.recorder = context_.recorder;
  setup.job = job.spec.workflow.workflow.find_job(job.spec.job_id);
  setup.job_row = job.spec.job_row;
  setup.instance = job.spec.instance;
  setup.labels = job.spec.labels;
  const std::string cluster = slurm_cluster_end(job.state);
  const std::string output = (job.dir / fmt::format("slurm-{}.out", job.slurm_id)).string();
  std::string reason =
      cluster.empty()
          ? fmt::format(
                "infrastructure failure: Slurm job {} ended without the agent's "
                "outcome ({}the agent or its node died; Slurm's output: {})",
                job.slurm_id, job.state.empty() ? "" : "Slurm: " + job.state + "; ", output)
          : fmt::format("infrastructure failure: Slurm job {} ended: {} (Slurm's output: {})",
                        job.slurm_id, cluster, output);
  JobSummary summary = fail_job(setup, reason);
  finish(job, {std::move(summary), {StopReason::Kind::infrastructure, reason}});
}

void LabelRouter::start(JobId id, JobSpec spec, ExecutorEvents& events) {
  Executor& to = slurm_.pool_for(spec.labels) ? remote_ : host_;
  {
    kiln::MutexLock lock(mutex_);
    routed_[id] = &to;
  }
  to.start(id, std::move(spec), events);
}

void LabelRouter::cancel(JobId id, const StopReason& reason) {
  Executor* to = nullptr;
  {
    kiln::MutexLock lock(mutex_);
    if (auto it = routed_.find(id); it != routed_.end()) to = it->second;
  }
  if (to) to->cancel(id, reason);
}

}  // namespace kiln::engine
