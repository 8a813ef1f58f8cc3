#pragma once
// The scheduler's seams as fakes (ninja's Builder tests): no threads, store, processes or clock.
// A Harness loads workflows, advances the state machine, and plays the executor's part by
// finishing the jobs it was asked to start. Shared by scheduler_test.cpp and
// scheduler_queue_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/engine/schedule/scheduler.h"
#include "kiln/workflow/loader.h"

namespace kiln::engine::fakes {

inline workflow::Workflow load(std::string_view yaml, const std::string& name = "ci.yml") {
  auto loaded = workflow::load_workflow_text(yaml, name);
  for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
  return loaded.workflow.value_or(workflow::Workflow{});
}

class FakeExecutor final : public Executor {
 public:
  struct Started {
    JobId id;
    JobSpec spec;
  };
  void start(JobId id, JobSpec spec, ExecutorEvents&) override {
    started.push_back({id, std::move(spec)});
  }
  void cancel(JobId id, const StopReason& reason) override { cancels.emplace_back(id, reason); }

  std::vector<std::string> started_keys() const {
    std::vector<std::string> keys;
    for (const auto& s : started) keys.push_back(s.spec.instance.key);
    return keys;
  }
  const Started* find(const std::string& key) const {
    for (const auto& s : started)
      if (s.spec.instance.key == key) return &s;
    return nullptr;
  }

  std::vector<Started> started;
  std::vector<std::pair<JobId, StopReason>> cancels;
};

class NoEvents final : public ExecutorEvents {
 public:
  void line(JobId, const std::string&, std::string_view, std::string_view) override {}
  void finished(JobId, JobOutcome) override {}
};

// A host of `count` GPUs, granted first come first served.
class FakePlacer final : public Placer {
 public:
  explicit FakePlacer(int count) {
    for (int i = 0; i < count; ++i) {
      gpu::GpuInfo info;
      info.index = i;
      info.uuid = "GPU-" + std::to_string(i);
      info.vendor = "nvidia";
      gpus_.push_back(info);
    }
    free_.assign(static_cast<std::size_t>(count), true);
  }
  void begin_pass() override { ++passes; }
  Placement place(const PlaceRequest& request) override {
    Placement placement;
    const int wanted = request.gpus.count;
    if (wanted > static_cast<int>(gpus_.size())) {
      placement.verdict = Placement::Verdict::never;
      placement.reason = "the host has " + std::to_string(gpus_.size());
      return placement;
    }
    std::vector<std::size_t> taken;
    for (std::size_t i = 0; i < free_.size() && static_cast<int>(taken.size()) < wanted; ++i)
      if (free_[i]) taken.push_back(i);
    if (static_cast<int>(taken.size()) < wanted) {
      placement.verdict = Placement::Verdict::wait;
      placement.reason = "all GPUs are leased";
      return placement;
    }
    placement.verdict = Placement::Verdict::granted;
    for (auto i : taken) {
      free_[i] = false;
      placement.gpus.push_back(gpus_[i]);
    }
    return placement;
  }
  std::map<std::string, std::string> environment(
      const std::vector<gpu::GpuInfo>& gpus) const override {
    return device_environment(gpus);
  }
  void release(const std::vector<gpu::GpuInfo>& gpus) {
    for (const auto& g : gpus) free_[static_cast<std::size_t>(g.index)] = true;
  }
  int passes = 0;

 private:
  std::vector<gpu::GpuInfo> gpus_;
  std::vector<bool> free_;
};

// Rows in memory, with the recorder's contract: extras merged by key.
class FakeRecorder final : public RunRecorder {
 public:
  Result<store::Run> create_run(store::Run run) override {
    run.id = next_run_++;
    if (run.number == 0) run.number = 1;
    runs[run.id] = run;
    return run;
  }
  void finish_run(std::int64_t run_id, store::RunStatus status) override {
    runs[run_id].status = status;
  }
  std::int64_t create_job(const store::Job& job) override {
    auto& row = jobs[next_job_] = job;
    row.id = next_job_;
    return next_job_++;
  }
  void set_job_extra(std::int64_t job_id, JobExtra key, nlohmann::json value) override {
    jobs[job_id].extra[std::string(to_string(key))] = std::move(value);
  }
  void reuse_job(std::int64_t job_id, const store::Job& earlier) override {
    jobs[job_id].outputs = earlier.outputs;
    jobs[job_id].extra["reused_from"] = {{"run", earlier.run_id}, {"job", earlier.id}};
  }
  void start_job(std::int64_t) override {}
  void record_queue(std::int64_t job_id, const store::JobQueueTime& queue) override {
    jobs[job_id].queue = queue;
  }
  void finish_job(std::int64_t job_id, const JobResult& result) override {
    jobs[job_id].conclusion = result.conclusion;
    jobs[job_id].message = result.message;
    if (result.queue) jobs[job_id].queue = *result.queue;
  }
  std::vector<std::string> reuse_artifacts(const store::Job&, std::int64_t, std::int64_t,
                                           const std::filesystem::path&) override {
    return {};
  }
  const store::Job* job(const std::string& key) const {
    for (const auto& [id, row] : jobs)
      if (row.key == key) return &row;
    return nullptr;
  }

  std::map<std::int64_t, store::Run> runs;
  std::map<std::int64_t, store::Job> jobs;

 private:
  std::int64_t next_run_ = 1, next_job_ = 1;
};

class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return now_; }
  std::int64_t wall_ms() const override { return 1'700'000'000'000; }
  std::chrono::steady_clock::time_point now_{};
};

class Recording final : public RunObserver {
 public:
  void run_started(const std::string&, std::int64_t) override {}
  void job_started(const std::string&) override {}
  void job_line(const std::string& key, std::string_view kind, std::string_view text) override {
    lines.push_back(key + " " + std::string(kind) + ": " + std::string(text));
  }
  void job_finished(const JobSummary& job) override { finished.push_back(job); }
  void progress(int, int, const std::vector<std::string>&) override {}
  void warning(const std::string& text) override { warnings.push_back(text); }

  const JobSummary* job(const std::string& key) const {
    for (const auto& j : finished)
      if (j.key == key) return &j;
    return nullptr;
  }
  std::vector<std::string> lines, warnings;
  std::vector<JobSummary> finished;
};

class Decisions final : public ConcurrencyRegistry::Listener {
 public:
  void granted(const std::string& id) override { granted_ids.push_back(id); }
  void cancelled(const std::string& id, const std::string& group) override {
    cancelled_ids.emplace_back(id, group);
  }
  std::vector<std::string> granted_ids;
  std::vector<std::pair<std::string, std::string>> cancelled_ids;
};

// One engine call: a selection, the fakes, and the scheduler over them.
struct Harness {
  explicit Harness(int max_parallel = 8, int gpus = 0,
                   std::shared_ptr<ConcurrencyRegistry> shared = nullptr)
      : placer(gpus), groups(shared ? shared : std::make_shared<ConcurrencyRegistry>()) {
    repo.root = "/work/repo";
    repo.name = "owner/repo";
    repo.head_sha = "0123456789abcdef0123456789abcdef01234567";
    event.name = "push";
    event.ref = "refs/heads/main";
    event.sha = repo.head_sha;
    owner = groups->join(decisions);
    this->max_parallel = max_parallel;
  }
  ~Harness() { groups->leave(owner); }

  void add(std::string_view yaml, const std::string& name = "ci.yml") {
    SelectedWorkflow selected;
    selected.path = name;
    selected.workflow = load(yaml, name);
    selected.name = selected.workflow.name ? selected.workflow.name->value : name;
    selection.triggered.push_back(std::move(selected));
  }
  void add_called(const std::string& uses, std::string_view yaml) {
    auto called = std::make_shared<workflow::CalledWorkflow>();
    called->display = uses;
    called->workflow = load(yaml, uses);
    selection.called[uses] = std::move(called);
  }
  Scheduler& start() {
    scheduler = std::make_unique<Scheduler>(options, repo, event,
                                            SchedulerSeams{.executor = executor,
                                                           .events = events,
                                                           .placer = placer,
                                                           .recorder = recorder,
                                                           .clock = clock,
                                                           .observer = observer,
                                                           .groups = *groups,
                                                           .group_owner = owner,
                                                           .max_parallel = max_parallel,
                                                           .job_token_prefix = "token"});
    if (rerun) scheduler->set_rerun(rerun->first, rerun->second, true);
    auto started = scheduler->start(selection);
    EXPECT_TRUE(started) << started.error().to_string();
    scheduler->advance();
    return *scheduler;
  }
  // Plays the executor: the started job `key` ends with `conclusion`.
  void finish(const std::string& key, Conclusion conclusion,
              std::map<std::string, std::string> outputs = {}) {
    const auto* started = executor.find(key);
    ASSERT_NE(started, nullptr) << key << " was not started";
    JobOutcome outcome;
    outcome.summary.key = key;
    outcome.summary.job_id = started->spec.job_id;
    outcome.summary.conclusion = conclusion;
    outcome.summary.outputs = std::move(outputs);
    outcome.stop = stop_reason_of(outcome.summary);
    placer.release(started->spec.gpus);
    scheduler->job_finished(started->id, std::move(outcome));
    scheduler->advance();
  }

  RunOptions options;
  RepositoryInfo repo;
  plan::Event event;
  Selection selection;
  FakeExecutor executor;
  NoEvents events;
  FakePlacer placer;
  FakeRecorder recorder;
  FakeClock clock;
  Recording observer;
  Decisions decisions;
  std::shared_ptr<ConcurrencyRegistry> groups;
  int owner = 0;
  int max_parallel = 8;
  std::optional<std::pair<store::Run, std::vector<store::Job>>> rerun;
  std::unique_ptr<Scheduler> scheduler;
};

}  // namespace kiln::engine::fakes
