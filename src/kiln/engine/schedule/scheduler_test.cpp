// The scheduler over fakes of its seams (ninja's Builder tests): no threads, store, processes or
// clock. Each test loads a workflow, advances the state machine, and plays the executor's part by
// finishing the jobs it was asked to start.

#include "kiln/engine/schedule/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/workflow/loader.h"

namespace kiln::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

workflow::Workflow load(std::string_view yaml, const std::string& name = "ci.yml") {
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
  void finish_job(std::int64_t job_id, const JobResult& result) override {
    jobs[job_id].conclusion = result.conclusion;
    jobs[job_id].message = result.message;
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

TEST(Scheduler, MaxParallelBoundsTheJobsRunningAtOnce) {
  Harness h(/*max_parallel=*/2);
  h.add(R"yaml(on: push
jobs:
  a: {runs-on: linux, steps: [{run: a}]}
  b: {runs-on: linux, steps: [{run: b}]}
  c: {runs-on: linux, steps: [{run: c}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "b"));
  h.finish("b", Conclusion::success);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "b", "c"));
  h.finish("a", Conclusion::success);
  h.finish("c", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  auto report = h.scheduler->report();
  ASSERT_EQ(report.runs.size(), 1u);
  EXPECT_EQ(report.runs[0].conclusion, Conclusion::success);
  EXPECT_EQ(h.recorder.runs.begin()->second.status, store::RunStatus::success);
}

// --max-parallel bounds the jobs on this host; jobs sent to a Slurm pool neither wait for a local
// slot nor take one, and get no local GPUs (this host has none).
TEST(Scheduler, JobsForSlurmTakeNoLocalSlotNorLocalGpus) {
  Harness h(/*max_parallel=*/1, /*gpus=*/0);
  config::SlurmPool pool;
  pool.labels = {"gpu"};
  h.options.slurm = config::SlurmConfig{};
  h.options.slurm->pools.push_back(pool);
  h.add(R"yaml(on: push
jobs:
  a: {runs-on: linux, steps: [{run: a}]}
  b: {runs-on: [self-hosted, 'gpu:1'], steps: [{run: b}]}
  c: {runs-on: 'gpu:2', steps: [{run: c}]}
  d: {runs-on: linux, steps: [{run: d}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(h.executor.find("b")->spec.gpus.empty());
  h.finish("b", Conclusion::success);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "b", "c"));  // d waits for a's slot
  h.finish("a", Conclusion::success);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "b", "c", "d"));
  h.finish("c", Conclusion::success);
  h.finish("d", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  EXPECT_EQ(h.scheduler->report().runs[0].conclusion, Conclusion::success);
}

TEST(Scheduler, NeedsWaitAndIfDecidesOnTheirResults) {
  Harness h;
  h.add(R"yaml(on: push
jobs:
  build: {runs-on: linux, steps: [{run: a}]}
  report: {needs: build, if: failure(), runs-on: linux, steps: [{run: b}]}
  deploy: {needs: build, runs-on: linux, steps: [{run: c}]}
  notify: {needs: build, if: "needs.build.result == 'failure'", runs-on: linux, steps: [{run: d}]}
  nightly: {if: "github.event_name == 'schedule'", runs-on: linux, steps: [{run: e}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("build"));
  ASSERT_NE(h.observer.job("nightly"), nullptr);
  EXPECT_EQ(h.observer.job("nightly")->reason, "if: github.event_name == 'schedule' was false");
  h.finish("build", Conclusion::failure);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("build", "report"));
  ASSERT_NE(h.observer.job("deploy"), nullptr);
  EXPECT_EQ(h.observer.job("deploy")->conclusion, Conclusion::skipped);
  EXPECT_EQ(h.observer.job("deploy")->reason, "a needed job did not succeed");
  // Without a status function, `if:` has an implicit success() (GitHub's rule).
  ASSERT_NE(h.observer.job("notify"), nullptr);
  EXPECT_EQ(h.observer.job("notify")->reason, "a needed job did not succeed");
  h.finish("report", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  EXPECT_EQ(h.scheduler->report().runs[0].conclusion, Conclusion::failure);
}

TEST(Scheduler, FailFastCancelsTheRunningAndQueuedSiblings) {
  Harness h(/*max_parallel=*/2);
  h.add(R"yaml(on: push
jobs:
  test:
    strategy: {matrix: {n: [1, 2, 3]}}
    runs-on: linux
    steps: [{run: t}]
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("test (1)", "test (2)"));
  h.finish("test (1)", Conclusion::failure);
  // The running sibling is asked to stop, the queued one never starts.
  ASSERT_EQ(h.executor.cancels.size(), 1u);
  EXPECT_EQ(h.executor.cancels[0].first, h.executor.find("test (2)")->id);
  EXPECT_EQ(h.executor.cancels[0].second.kind, StopReason::Kind::fail_fast);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("test (1)", "test (2)"));
  ASSERT_NE(h.observer.job("test (3)"), nullptr);
  EXPECT_EQ(h.observer.job("test (3)")->conclusion, Conclusion::cancelled);
  EXPECT_EQ(h.observer.job("test (3)")->reason, "cancelled by fail-fast: test (1) failed");
  h.finish("test (2)", Conclusion::cancelled);
  EXPECT_EQ(h.observer.job("test (2)")->reason, "cancelled by fail-fast: test (1) failed");
  EXPECT_TRUE(h.scheduler->done());
}

TEST(Scheduler, CancelInProgressStopsTheRunningHolderOfTheGroup) {
  Harness h(/*max_parallel=*/1);
  h.add(R"yaml(on: push
jobs:
  deploy:
    strategy: {matrix: {env: [one, two]}}
    concurrency: {group: deploy, cancel-in-progress: true}
    runs-on: linux
    steps: [{run: d}]
)yaml");
  h.max_parallel = 2;
  h.start();
  // (one) holds the group and runs; (two) asks for it with cancel-in-progress and waits.
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("deploy (one)"));
  ASSERT_EQ(h.executor.cancels.size(), 1u);
  EXPECT_EQ(h.executor.cancels[0].second, StopReason::concurrency("deploy"));
  h.finish("deploy (one)", Conclusion::cancelled);
  EXPECT_EQ(h.observer.job("deploy (one)")->reason,
            "cancelled: a newer run in concurrency group 'deploy'");
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("deploy (one)", "deploy (two)"));
}

TEST(Scheduler, AnotherEngineCallsNewerRunCancelsThisOnesJob) {
  auto shared = std::make_shared<ConcurrencyRegistry>();
  const std::string yaml = R"yaml(on: push
concurrency: {group: main, cancel-in-progress: true}
jobs:
  build: {runs-on: linux, steps: [{run: b}]}
)yaml";
  Harness first(8, 0, shared), second(8, 0, shared);
  first.add(yaml);
  first.start();
  ASSERT_THAT(first.executor.started_keys(), ElementsAre("build"));
  second.add(yaml);
  second.start();
  EXPECT_THAT(second.executor.started_keys(), IsEmpty());
  // The registry tells the first call's listener (the driver's queue); the driver hands it on.
  ASSERT_EQ(first.decisions.cancelled_ids.size(), 1u);
  first.scheduler->cancelled(first.decisions.cancelled_ids[0].first,
                             first.decisions.cancelled_ids[0].second);
  ASSERT_EQ(first.executor.cancels.size(), 1u);
  EXPECT_EQ(first.executor.cancels[0].second.kind, StopReason::Kind::concurrency);
  first.finish("build", Conclusion::cancelled);
  EXPECT_TRUE(first.scheduler->done());
  ASSERT_EQ(second.decisions.granted_ids.size(), 1u);
  second.scheduler->granted(second.decisions.granted_ids[0]);
  second.scheduler->advance();
  EXPECT_THAT(second.executor.started_keys(), ElementsAre("build"));
}

TEST(Scheduler, CtrlCCancelsButAlwaysJobsStillRun) {
  Harness h;
  h.add(R"yaml(on: push
jobs:
  build: {runs-on: linux, steps: [{run: b}]}
  cleanup: {needs: build, if: always(), runs-on: linux, steps: [{run: c}]}
  deploy: {needs: build, runs-on: linux, steps: [{run: d}]}
)yaml");
  h.start();
  h.scheduler->cancel_all();
  ASSERT_EQ(h.executor.cancels.size(), 1u);
  EXPECT_EQ(h.executor.cancels[0].second, StopReason::interrupt());
  h.finish("build", Conclusion::cancelled);
  EXPECT_EQ(h.observer.job("build")->reason, "cancelled (interrupt)");
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("build", "cleanup"));
  ASSERT_NE(h.observer.job("deploy"), nullptr);
  EXPECT_EQ(h.observer.job("deploy")->conclusion, Conclusion::cancelled);
  EXPECT_EQ(h.observer.job("deploy")->reason, "the run was cancelled");
  h.finish("cleanup", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  EXPECT_EQ(h.scheduler->report().runs[0].conclusion, Conclusion::cancelled);
}

TEST(Scheduler, RerunOfFailedJobsReusesSuccessesAndKeepsTheirGraphEdges) {
  Harness h;
  h.add(R"yaml(on: push
jobs:
  build: {runs-on: linux, outputs: {v: x}, steps: [{run: b}]}
  test: {needs: build, runs-on: linux, steps: [{run: t}]}
)yaml");
  store::Run earlier;
  earlier.id = 41;
  earlier.number = 7;
  earlier.attempt = 1;
  store::Job built;
  built.id = 100;
  built.run_id = 41;
  built.key = "build";
  built.status = store::JobStatus::success;
  built.outputs = {{"v", "1.2"}};
  store::Job tested = built;
  tested.id = 101;
  tested.key = "test";
  tested.status = store::JobStatus::failure;
  h.rerun = {{earlier, {built, tested}}};
  h.start();
  // build is not run again: its success and outputs are taken over; test runs with them.
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("test"));
  EXPECT_EQ(h.executor.find("test")->spec.contexts["needs"]["build"]["outputs"]["v"], "1.2");
  EXPECT_EQ(h.executor.find("test")->spec.run_attempt, 2);
  const store::Job* reused = h.recorder.job("build");
  ASSERT_NE(reused, nullptr);
  EXPECT_EQ(reused->conclusion, Conclusion::success);
  EXPECT_EQ(reused->extra["reused_from"]["job"], 100);
  EXPECT_EQ(reused->extra["graph"]["node"], "build");
  EXPECT_EQ(h.recorder.job("test")->extra["graph"]["needs"], nlohmann::json::array({"build"}));
  h.finish("test", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
}

TEST(Scheduler, GpuJobsWaitForTheGpusAndThenGetThem) {
  Harness h(8, /*gpus=*/1);
  h.add(R"yaml(on: push
jobs:
  first: {runs-on: "gpu:1", steps: [{run: a}]}
  second: {runs-on: "gpu:1", steps: [{run: b}]}
  cpu: {runs-on: linux, steps: [{run: c}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("first", "cpu"));
  EXPECT_EQ(h.executor.find("first")->spec.gpu_env.at("CUDA_VISIBLE_DEVICES"), "GPU-0");
  EXPECT_EQ(h.executor.find("cpu")->spec.gpu_env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_THAT(h.observer.lines, ElementsAre("second kiln: waiting for GPUs: all GPUs are leased"));
  h.finish("cpu", Conclusion::success);  // still waiting, said once
  EXPECT_EQ(h.observer.lines.size(), 1u);
  h.finish("first", Conclusion::success);
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("first", "cpu", "second"));
  EXPECT_EQ(h.executor.find("second")->spec.gpu_env.at("KILN_GPU_UUIDS"), "GPU-0");
}

TEST(Scheduler, AGpuRequestTheHostCanNeverServeFailsAtOnce) {
  Harness h(8, /*gpus=*/1);
  h.add(R"yaml(on: push
jobs:
  big: {runs-on: "gpu:4", steps: [{run: a}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), IsEmpty());
  ASSERT_NE(h.observer.job("big"), nullptr);
  EXPECT_EQ(h.observer.job("big")->conclusion, Conclusion::failure);
  EXPECT_THAT(h.observer.job("big")->reason, HasSubstr("runs-on asks for"));
  EXPECT_TRUE(h.scheduler->done());
}

TEST(Scheduler, ReusableWorkflowJobsRunInTheirCallsScope) {
  Harness h;
  h.add(R"yaml(on: push
jobs:
  call:
    strategy: {matrix: {arch: [x86, arm]}}
    uses: ./.github/workflows/build.yml
    with: {arch: "${{ matrix.arch }}"}
  after: {needs: call, runs-on: linux, steps: [{run: a}]}
)yaml");
  h.add_called("./.github/workflows/build.yml", R"yaml(on:
  workflow_call:
    inputs: {arch: {type: string, required: true}}
    outputs: {artifact: {value: "${{ jobs.compile.outputs.file }}"}}
jobs:
  compile: {runs-on: linux, outputs: {file: f}, steps: [{run: c}]}
  check: {needs: compile, runs-on: linux, steps: [{run: k}]}
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(),
              ElementsAre("call (x86) / compile", "call (arm) / compile"));
  EXPECT_EQ(h.executor.find("call (x86) / compile")->spec.contexts["inputs"]["arch"], "x86");
  // `needs: compile` is the compile job of the same call.
  h.finish("call (x86) / compile", Conclusion::success, {{"file", "x86.bin"}});
  ASSERT_THAT(h.executor.started_keys(),
              ElementsAre("call (x86) / compile", "call (arm) / compile", "call (x86) / check"));
  h.finish("call (x86) / check", Conclusion::success);
  h.finish("call (arm) / compile", Conclusion::success, {{"file", "arm.bin"}});
  h.finish("call (arm) / check", Conclusion::success);
  ASSERT_NE(h.executor.find("after"), nullptr);
  // The caller's outputs: the called workflow's, from the last call to set one.
  EXPECT_EQ(h.executor.find("after")->spec.contexts["needs"]["call"]["outputs"]["artifact"],
            "arm.bin");
  EXPECT_EQ(h.recorder.job("call (arm) / check")->extra["graph"]["needs"],
            nlohmann::json::array({"call (arm) / compile"}));
}

}  // namespace
}  // namespace kiln::engine
