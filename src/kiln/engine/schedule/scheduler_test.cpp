// The scheduler over fakes of its seams (ninja's Builder tests): no threads, store, processes or
// clock. Each test loads a workflow, advances the state machine, and plays the executor's part by
// finishing the jobs it was asked to start.

#include "kiln/engine/schedule/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/engine/schedule/concurrency_registry.h"
#include "kiln/engine/schedule/scheduler_test_support.h"

namespace kiln::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace kiln::engine::fakes;

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
