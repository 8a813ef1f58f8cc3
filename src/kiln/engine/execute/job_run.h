#pragma once
// One job instance while it runs (job_runner.h's run_job): internal to execute/. The class is
// defined across job_runner.cpp (set-up, clean-up, the record), job_steps.cpp (the step loop),
// job_actions.cpp (actions and ActionHost) and job_collect.cpp (log, benchmarks, tests,
// GPU telemetry).

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/engine/collect/gpu_telemetry.h"
#include "kiln/engine/collect/quarantine.h"
#include "kiln/engine/execute/action_runner.h"
#include "kiln/engine/execute/container_job.h"
#include "kiln/engine/execute/job_runner.h"
#include "kiln/engine/execute/step_group.h"
#include "kiln/engine/gate/benchmarks.h"
#include "kiln/exec/actions.h"
#include "kiln/exec/kernel_oom.h"
#include "kiln/exec/process_tracker.h"
#include "kiln/exec/step_runner.h"

namespace kiln::engine {

// Everything one job instance needs while its steps run.
class JobRun : public ActionHost, public StepGroupHost {
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;
  static constexpr int k_default_job_timeout_minutes = 360;

 public:
  explicit JobRun(const JobSetup& setup);

  // The job as the observer shows it (JobSetup::shown_key).
  const std::string& shown_key() const;

  JobSummary run();

 private:
  // A file-system-safe name for a job key: "build (linux, 3.11)" → "build_linux_3.11_".
  static std::string safe_name(const std::string& key);
  static store::LogStream stream_of(std::string_view kind);
  // GitHub's raw log markers for lines that are not plain output.
  static std::string stored_text(std::string_view kind, std::string_view text);
  // Parses "10", "2.5" or an expression's value as minutes; 0 when absent.
  static Result<double> minutes_of(const std::optional<workflow::Text>& text,
                                   const expr::Context& context);
  static Result<bool> flag_of(const std::optional<workflow::Text>& text,
                              const expr::Context& context);

  Status prepare_after_check();
  Status prepare();

  // container_job.h: services, then the job container; its PATH is the steps' base PATH.
  Status start_containers(const workflow::Job& job);

  void refresh_env_context();

  Result<std::string> hash_files(const std::vector<std::string>& patterns);

  bool cancelled() const { return setup_.cancel->cancelled() || timed_out_; }

  void run_steps();

  // The perf gate (benchmarks.h): results are stored after every step, judged at the end.
  BenchmarkContext benchmark_context() const;
  void collect_benchmarks();
  // JUnit XML the steps wrote (test_results.h): read once, after the last step.
  void collect_tests();
  void gate_benchmarks();

  // The job's action steps as run_pre_steps sees them when the job starts.
  std::vector<ActionCall> pre_step_calls();

  void run_step(const workflow::Step& step);
  // The end of a step: its conclusion, the job's failure, steps.<id>, its store row. A step
  // cancelled on purpose (`cancel:`, the job's end) does not fail the job.
  Conclusion finish_step(const workflow::Step& step, StepSummary result, store::Step& row,
                         Conclusion outcome, Clock::time_point step_started,
                         bool cancelled_on_purpose);
  // The job's steps are done: the background steps still running are waited for (GitHub's
  // implicit wait-all), or cancelled when the job failed, was cancelled or ran out of time.
  void end_step_group();

  // A step's $GITHUB_STEP_SUMMARY (masked by the step runner), appended to the job's summary as
  // GitHub shows one job summary made of its steps' summaries.
  void add_step_summary(const std::string& markdown);

  // The first step that failed: how it ended and its last lines, and the job's reason.
  void record_failure(const StepSummary& result, Conclusion outcome);
  StepFailure describe_failure(const StepSummary& result, Conclusion outcome) const;

  // quarantine.h's step rule: a foreground step that exited 1-127 and whose new or changed JUnit
  // files fail only quarantined tests does not fail the job (its conclusion becomes success, its
  // outcome stays failure, as with continue-on-error); true when it was excused so.
  bool excuse_quarantined(StepSummary& result);
  // A job green only by excused steps is failed after all when the GPUs or the kernel say its
  // tests' failures may not have been luck (a GPU fault, someone else's GPU memory, an OOM kill).
  void withdraw_excuse_if_unsafe();

  std::string default_step_name(const workflow::Step& step) const;

  // The environment of a step: the host's, GITHUB_*, workflow and job env, $GITHUB_ENV
  // additions, the step's env, and $GITHUB_PATH additions in front of PATH.
  Result<core::Environment> step_environment(const workflow::Step& step);

  // `background`: a `run:` step's request goes to the step group (step_group.h), which runs it.
  Conclusion execute(const workflow::Step& step, StepSummary& result, bool background = false);

  Conclusion execute_inner(const workflow::Step& step, StepSummary& result, bool background);

  // What a `run:` step's run left: its exit code, outputs, file commands, and its conclusion.
  Conclusion apply_run(const Result<exec::StepResult>& outcome, StepSummary& result,
                       bool step_limit, double step_minutes);

  static std::optional<workflow::Text> pick(const std::optional<workflow::Text>& a,
                                            const std::optional<workflow::Text>& b,
                                            const std::optional<workflow::Text>& c);

  exec::ActionContext action_context(const core::Environment& env);

  // An action step with its inputs evaluated (on the job's thread), ready to run through a host.
  struct PreparedAction {
    ActionCall call;
    core::Environment env;     // the step's
    bool file_action = false;  // local, mirrored, docker://; else a built-in action
  };
  Result<PreparedAction> prepare_action(const workflow::Step& step, const core::Environment& env);
  static ActionOutcome run_prepared_action(ActionHost& host, const PreparedAction& action);

  Conclusion execute_action(const workflow::Step& step, const core::Environment& env);

  // job_background_action.cpp: an action step in the background runs through a host of its
  // own (BackgroundAction), so that its lines, environment and file commands stay its own until
  // it is waited for.
  Conclusion start_background_action(const workflow::Step& step, const StepSummary& result,
                                     const core::Environment& env, milliseconds timeout,
                                     bool step_limit, double step_minutes);
  // Ends what the action step `index` run in the background left for the job (its artifacts and
  // post steps); nothing for a `run:` step.
  void end_background_action(int index);
  // A built-in action's post step (actions/cache's save, ...), queued on `posts`.
  void queue_builtin_post(const exec::PostAction& post, const core::Environment& env,
                          std::vector<std::function<bool()>>& posts);
  class BackgroundAction;
  // Kept until the job ends: a JavaScript action's post step, queued by one, runs through it.
  // (shared_ptr: its deleter is made where BackgroundAction is complete.)
  std::map<int, std::shared_ptr<BackgroundAction>> background_actions_;

 public:
  // ActionHost: what local and mirrored actions use of the job (action_runner.h).
  void log(std::string_view kind, const std::string& text) override { log_kiln(kind, text); }

  core::Environment job_environment() override;

  void finish_environment(core::Environment& env) override;

  Result<exec::StepResult> run_process(exec::StepRequest request) override;

  Conclusion run_builtin(const std::string& uses, const std::map<std::string, std::string>& with,
                         const core::Environment& env,
                         std::map<std::string, std::string>& outputs) override;

  void add_post(std::function<bool()> run) override { post_actions_.push_back(std::move(run)); }

  expr::Context job_context() override;

  // StepGroupHost (step_group.h), defined in job_step_group.cpp.
  std::unique_ptr<exec::LogSink> step_sink(int index, const std::string& label) override;
  void note(const std::string& text) override { log_kiln("kiln", text); }
  Conclusion finish_background(int index, const Result<exec::StepResult>& run,
                               bool cancelled_on_purpose) override;

  std::filesystem::path workspace() const override { return workspace_; }
  const workflow::ReferenceRoots& references() const override { return references_; }

 private:
  void record_artifacts(const std::vector<exec::ArtifactInfo>& artifacts);

  // GPU telemetry (gpu_telemetry.h) while the steps run; the budget's verdict fails the job.
  void start_gpu_telemetry();
  void stop_gpu_telemetry();

  // Post steps in reverse order: each decides whether it runs (post-if, save-always).
  void run_post_actions();

  bool wants_debug_hold() const;

  // debug_hold.h: the container, workspace, processes and GPUs stay until `kiln release`, the
  // hold's time or a cancel.
  void hold_for_debugging();

  static std::string format_minutes(milliseconds duration);

  // failure_class.h: the class and evidence of a failed job, from the signals gathered below.
  void classify();

  // Every process the job started is gone at its end, daemons included.
  void clean_up();

  void finish();

 public:
  // Lines of the job's log: to the store as they come, and to the observer. A `held` line (a
  // step's output, through LogSink) waits for flush_log(), which stores the lines held with one
  // write and then shows them; any other line flushes them first, so the order stays.
  void log_line(std::string_view kind, std::string_view text, bool held = false);
  // A line of background step `step`, from its thread: `prefix` names it on the terminal.
  void log_background_line(int step, std::string_view prefix, std::string_view kind,
                           std::string_view text, bool held = false);
  void flush_log();

  Status append_directly(std::span<const store::LogLine> lines);

  void log_kiln(std::string_view kind, const std::string& text);
  // An annotation of a step (from any thread): kept for the job's summary (check runs).
  void add_annotation(const exec::Annotation& annotation);

 private:
  // log_line's body, with log_mutex_ held: `recent` keeps the step's last lines.
  void log_line_locked(std::optional<int> step, std::deque<std::string>& recent,
                       std::string_view prefix, std::string_view kind, std::string_view text,
                       bool held);
  // The line to the lines held (log_mutex_ held); stored and shown now unless `held`.
  void store_and_show_locked(std::optional<int> step, std::string_view prefix,
                             std::string_view kind, std::string_view text, bool held = false);
  // The lines held: to the store with one write (durable), then to the observer.
  void flush_log_locked();
  // The line in the job's finished log: how many lines the size limit dropped (if any).
  void report_dropped_lines();

  class LogSink : public exec::LogSink {
   public:
    // With `background`: the lines of that background step, shown after `prefix`.
    explicit LogSink(JobRun& job, std::optional<int> background = std::nullopt,
                     std::string prefix = {})
        : job_(job), background_(background), prefix_(std::move(prefix)) {}
    // Whatever the step runner held back (a return on an error) is stored and shown at the end.
    ~LogSink() override { job_.flush_log(); }
    LogSink(const LogSink&) = delete;
    LogSink& operator=(const LogSink&) = delete;
    void flush() override { job_.flush_log(); }
    void write(const exec::LogEvent& event) override {
      switch (event.kind) {
        case exec::LogKind::output:
        case exec::LogKind::command:
          line(event.stream == core::Stream::err ? "stderr" : "output", event.text);
          break;
        case exec::LogKind::group_start:
          line("group", event.text);
          break;
        case exec::LogKind::group_end:
          line("endgroup", "");
          break;
        case exec::LogKind::debug:
          line("debug", event.text);
          break;
        case exec::LogKind::system:
          line("kiln", event.text);
          break;
        case exec::LogKind::annotation: {
          const auto& note = event.annotation;
          if (note) job_.add_annotation(*note);
          std::string kind = note ? std::string(exec::to_string(note->level)) : "error";
          std::string where;
          if (note && !note->file.empty())
            where = note->line ? fmt::format("{}:{}: ", note->file, note->line) : note->file + ": ";
          line(kind, where + event.text);
          break;
        }
      }
    }

   private:
    void line(std::string_view kind, std::string_view text) {
      if (background_)
        job_.log_background_line(*background_, prefix_, kind, text, true);
      else
        job_.log_line(kind, text, true);
    }

    JobRun& job_;
    std::optional<int> background_;
    std::string prefix_;
  };

  const JobSetup& setup_;
  const workflow::Job& job_;
  JobSummary summary_;
  Clock::time_point started_;
  Clock::time_point deadline_;
  double job_timeout_minutes_ = k_default_job_timeout_minutes;
  bool timed_out_ = false;
  bool failed_ = false;
  bool store_warned_ = false;
  // The evidence a failed job's class is read from (failure_class.h): the kernel's OOM kills
  // while it ran, what the after-job GPU check found, and what of kiln's machinery failed.
  std::unique_ptr<exec::OomWatch> oom_watch_;
  AfterJob after_job_;
  std::string infrastructure_;
  std::unique_ptr<store::LogWriter> log_;  // the job's lines, batched (store.h)
  std::optional<int> current_step_;
  // The annotations with the step that made them (null: set-up or clean-up), for the dashboard
  // (JobExtra::annotations); summary_.annotations has them for the forge's check run.
  nlohmann::json annotations_ = nlohmann::json::array();
  std::filesystem::path job_dir_, workspace_, temp_dir_, benchmarks_file_, test_results_file_;
  nlohmann::json test_totals_;
  // Quarantined tests (quarantine.h): those of the repository in force when the job started; the
  // result files before the foreground step running now (stamped only with a quarantine); the
  // quarantined tests whose failures were excused, and the first excused step's failure.
  std::set<std::string> quarantined_;
  std::optional<int> stamped_step_;
  FileStamps step_stamps_;
  std::vector<std::string> excused_tests_;
  std::optional<StepFailure> excused_failure_;
  std::optional<BenchmarkCollector> benchmarks_;
  std::string token_;
  std::optional<exec::JobSubreaper> subreaper_;
  // jobs.limits: the host job's cgroup (core/cgroup.h), its OOM kills counted at clean-up.
  std::optional<core::JobCgroup> cgroup_;
  std::uint64_t cgroup_oom_kills_ = 0;
  // jobs.user for a host job (null: steps run as kiln's user); give_job_dir() hands what kiln
  // wrote into the job's directory to that user.
  const core::RunAs* run_as_ = nullptr;
  void give_job_dir();
  std::unique_ptr<JobTelemetry> telemetry_;
  expr::Context context_;
  core::Environment base_env_;
  std::map<std::string, std::string> job_env_;
  std::map<std::string, std::string> file_env_;
  std::vector<std::string> path_additions_;
  std::map<std::string, std::string> raw_outputs_;  // of the step running now, unmasked
  std::deque<std::string> recent_lines_;            // of the step running now, masked
  std::string step_summary_;                        // the steps' $GITHUB_STEP_SUMMARY
  std::string step_end_kind_;  // "timeout" when the step running now ran out of time
  std::vector<std::function<bool()>> post_actions_;
  // While a step runs an action: the end of its timeout-minutes, for the action's processes.
  std::optional<Clock::time_point> step_deadline_;
  double step_minutes_ = 0;
  workflow::ReferenceRoots references_;
  std::optional<workflow::Job> resolved_containers_;  // resolve_containers' copy, if any
  std::unique_ptr<ContainerJob> containers_;          // a job with `container:` or `services:`
  // Background steps started and not ended yet: what finish_background needs to end them.
  struct BackgroundStep {
    StepSummary result;
    store::Step row;
    Clock::time_point started;
    bool step_limit = false;
    double minutes = 0;
  };
  std::map<int, BackgroundStep> background_;
  std::mutex log_mutex_;  // log_, store_warned_ and the recent lines while steps run at once
  // RunOptions::max_log_bytes (log_mutex_): the bytes kept so far, the lines and bytes dropped
  // past the limit, and the lines that say why the job ended kept past it.
  std::uint64_t log_bytes_ = 0;
  std::uint64_t log_dropped_lines_ = 0;
  std::uint64_t log_dropped_bytes_ = 0;
  std::size_t kept_past_limit_ = 0;
  // The lines held until flush_log() (log_mutex_): what is stored, and what is shown.
  static constexpr std::size_t k_max_held_lines = 8192;
  std::vector<store::LogLine> held_lines_;
  std::vector<ShownLine> held_shown_;
  std::map<int, std::deque<std::string>> step_lines_;  // each background step's last lines
  // Last: destroyed first, so that no background step's thread outlives what it writes to.
  StepGroup step_group_{*this};
};

}  // namespace kiln::engine
