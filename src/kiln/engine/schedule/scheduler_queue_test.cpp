// The order of the queue over the scheduler's fakes: priority classes (kiln.yml priority:), FIFO
// within a class, aging, GPU jobs of higher classes in another engine call, and queue time.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/config/host_config.h"
#include "kiln/engine/schedule/gpu_queue.h"
#include "kiln/engine/schedule/scheduler.h"
#include "kiln/engine/schedule/scheduler_test_support.h"

namespace kiln::engine {
namespace {

using namespace std::chrono_literals;
using namespace kiln::engine::fakes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The host's kiln.yml: its priority classes and the labels it serves.
void configure(Harness& h, std::string_view yaml) {
  auto config = config::parse_host_config(yaml, "kiln.yml");
  ASSERT_TRUE(config) << config.error().to_string();
  h.options.priority = config->priority;
  h.options.gpu_labels = config->gpu_labels;
}

constexpr std::string_view k_by_label = R"(labels: [release, nightly]
priority:
  classes:
    - {name: release, label: release}
    - {name: nightly, label: nightly}
)";

TEST(SchedulerQueue, GpuJobsStartByClassAndInOrderWithinOne) {
  Harness h(/*max_parallel=*/8, /*gpus=*/1);
  configure(h, k_by_label);
  h.add(R"yaml(on: push
jobs:
  first: {runs-on: gpu, steps: [{run: a}]}
  low1: {runs-on: [gpu, nightly], steps: [{run: a}]}
  high1: {runs-on: [gpu, release], steps: [{run: a}]}
  plain: {runs-on: gpu, steps: [{run: a}]}
  low2: {runs-on: [gpu, nightly], steps: [{run: a}]}
  high2: {runs-on: [gpu, release], steps: [{run: a}]}
)yaml");
  h.start();
  for (const char* key : {"high1", "high2", "low1", "low2", "first"})
    h.finish(key, Conclusion::success);
  EXPECT_THAT(h.executor.started_keys(),
              ElementsAre("high1", "high2", "low1", "low2", "first", "plain"));
  h.finish("plain", Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  EXPECT_EQ(h.recorder.job("high2")->queue.priority, "release");
  EXPECT_EQ(h.recorder.job("low1")->queue.priority, "nightly");
  EXPECT_EQ(h.recorder.job("plain")->queue.priority, "default");
}

TEST(SchedulerQueue, WithoutClassesTheQueueIsFirstComeFirstServed) {
  Harness h(/*max_parallel=*/8, /*gpus=*/1);
  configure(h, "labels: [release, nightly]\n");
  h.add(R"yaml(on: push
jobs:
  a: {runs-on: [gpu, nightly], steps: [{run: a}]}
  b: {runs-on: [gpu, release], steps: [{run: a}]}
  c: {runs-on: gpu, steps: [{run: a}]}
)yaml");
  h.start();
  h.finish("a", Conclusion::success);
  h.finish("b", Conclusion::success);
  EXPECT_THAT(h.executor.started_keys(), ElementsAre("a", "b", "c"));
}

// `late` (release) is queued 15 minutes after `old` (default): with 10 minutes of aging, `old`
// has climbed into release by the time the GPU is free, and was there first.
std::vector<std::string> aging_order(std::string_view aging) {
  Harness h(/*max_parallel=*/8, /*gpus=*/1);
  configure(h, fmt::format(R"(labels: [release]
priority:
  aging: {}
  classes:
    - {{name: release, label: release}}
)",
                           aging));
  h.add(R"yaml(on: push
jobs:
  blocker: {runs-on: [gpu, release], steps: [{run: a}]}
  gate: {runs-on: linux, steps: [{run: a}]}
  late: {needs: gate, runs-on: [gpu, release], steps: [{run: a}]}
  old: {runs-on: gpu, steps: [{run: a}]}
)yaml");
  h.start();
  h.clock.now_ += 15min;
  h.finish("gate", Conclusion::success);  // `late` is queued now
  h.clock.now_ += 5min;
  h.finish("blocker", Conclusion::success);  // the GPU is free: one of them takes it
  h.finish(h.executor.started_keys().back(), Conclusion::success);
  h.finish(h.executor.started_keys().back(), Conclusion::success);
  EXPECT_TRUE(h.scheduler->done());
  return h.executor.started_keys();
}

TEST(SchedulerQueue, AgingLetsALowClassThatWaitedLongGoFirst) {
  EXPECT_THAT(aging_order("10m"), ElementsAre("blocker", "gate", "old", "late"));
  // Aged too slowly to catch up: the release job goes first although it came later.
  EXPECT_THAT(aging_order("1h"), ElementsAre("blocker", "gate", "late", "old"));
}

TEST(SchedulerQueue, QueueTimeSaysHowLongAndWhy) {
  Harness h(/*max_parallel=*/2, /*gpus=*/1);
  h.add(R"yaml(on: push
jobs:
  a: {runs-on: gpu, steps: [{run: a}]}
  b: {runs-on: gpu, steps: [{run: b}]}
  c: {runs-on: linux, steps: [{run: c}]}
  d: {runs-on: linux, concurrency: shared, steps: [{run: d}]}
  e: {runs-on: linux, concurrency: shared, steps: [{run: e}]}
)yaml");
  h.start();
  // a takes the GPU, c a slot, and b waits for the GPU; d and e for the slots.
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "c"));
  h.clock.now_ += 30s;
  h.finish("a", Conclusion::success);  // b takes the GPU and the slot: d waits for a slot
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "c", "b"));
  h.clock.now_ += 10s;
  h.finish("b", Conclusion::success);  // d takes the slot and its group
  h.finish("c", Conclusion::success);  // e has a slot now, but waits for d's group
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("a", "c", "b", "d"));
  h.clock.now_ += 5s;
  h.finish("d", Conclusion::success);
  h.finish("e", Conclusion::success);
  ASSERT_TRUE(h.scheduler->done());

  const auto& a = h.recorder.job("a")->queue;
  EXPECT_EQ(a.waited_ms, 0);
  EXPECT_TRUE(a.reasons_ms.empty());
  EXPECT_EQ(a.queued_at, h.clock.wall_ms());
  const auto& b = h.recorder.job("b")->queue;
  EXPECT_EQ(b.waited_ms, 30'000);
  EXPECT_EQ(b.reasons_ms, (std::map<std::string, std::int64_t>{{"gpus", 30'000}}));
  EXPECT_EQ(b.priority, "default");
  const auto& d = h.recorder.job("d")->queue;
  EXPECT_EQ(d.waited_ms, 40'000);
  EXPECT_EQ(d.reasons_ms, (std::map<std::string, std::int64_t>{{"slots", 40'000}}));
  const auto& e = h.recorder.job("e")->queue;
  EXPECT_EQ(e.waited_ms, 45'000);
  EXPECT_EQ(e.reasons_ms,
            (std::map<std::string, std::int64_t>{{"slots", 40'000}, {"concurrency", 5'000}}));
  // The run's summary carries the same figures (kiln run --json).
  auto report = h.scheduler->report();
  const auto& jobs = report.runs.at(0).jobs;
  auto summary = std::find_if(jobs.begin(), jobs.end(), [](const auto& j) { return j.key == "e"; });
  ASSERT_NE(summary, jobs.end());
  EXPECT_EQ(summary->queue.waited_ms, 45'000);
  EXPECT_EQ(summary->queue.reasons_ms.at("concurrency"), 5'000);
}

TEST(SchedulerQueue, StrategyMaxParallelIsAReasonOfItsOwn) {
  Harness h(/*max_parallel=*/8);
  h.add(R"yaml(on: push
jobs:
  m:
    runs-on: linux
    strategy: {max-parallel: 1, matrix: {n: [1, 2]}}
    steps: [{run: a}]
)yaml");
  h.start();
  ASSERT_THAT(h.executor.started_keys(), ElementsAre("m (1)"));
  h.clock.now_ += 7s;
  h.finish("m (1)", Conclusion::success);
  h.finish("m (2)", Conclusion::success);
  const auto& second = h.recorder.job("m (2)")->queue;
  EXPECT_EQ(second.waited_ms, 7'000);
  EXPECT_EQ(second.reasons_ms, (std::map<std::string, std::int64_t>{{"max-parallel", 7'000}}));
}

TEST(SchedulerQueue, AJobCancelledInTheQueueKeepsItsWaitButNoStart) {
  Harness h(/*max_parallel=*/8, /*gpus=*/1);
  h.add(R"yaml(on: push
jobs:
  a: {runs-on: gpu, steps: [{run: a}]}
  b: {runs-on: gpu, steps: [{run: b}]}
)yaml");
  h.start();
  h.clock.now_ += 3s;
  h.scheduler->cancel_all();
  h.scheduler->advance();
  const auto& b = h.recorder.job("b")->queue;
  EXPECT_FALSE(b.waited_ms);
  EXPECT_EQ(b.reasons_ms, (std::map<std::string, std::int64_t>{{"gpus", 3'000}}));
}

// Two engine calls of one process (kiln serve's triggers) share a GpuQueue: the pull request's
// GPU job waits while the push to main has one waiting, though its own GPU is free here.
TEST(SchedulerQueue, AHigherClassOfAnotherCallWaitingForGpusGoesFirst) {
  auto queue = std::make_shared<GpuQueue>();
  constexpr std::string_view classes = R"(priority:
  classes:
    - {name: main, branch: main, event: push}
    - {name: pull-request, event: pull_request}
)";
  Harness push(/*max_parallel=*/8, /*gpus=*/1);
  configure(push, classes);
  push.options.gpu_queue = queue;
  push.add(R"yaml(on: push
jobs:
  running: {runs-on: gpu, steps: [{run: a}]}
  release: {runs-on: gpu, steps: [{run: b}]}
)yaml");
  push.start();
  ASSERT_THAT(push.executor.started_keys(), ElementsAre("running"));

  Harness pr(/*max_parallel=*/8, /*gpus=*/1);
  configure(pr, classes);
  pr.options.gpu_queue = queue;
  pr.event.name = "pull_request";
  pr.event.ref = "refs/pull/7/merge";
  pr.event.base_ref = "main";
  pr.add(R"yaml(on: pull_request
jobs:
  test: {runs-on: gpu, steps: [{run: a}]}
  lint: {runs-on: linux, steps: [{run: a}]}
)yaml");
  pr.start();
  EXPECT_THAT(pr.executor.started_keys(), ElementsAre("lint"));  // jobs without GPUs go on
  EXPECT_THAT(pr.observer.lines,
              ::testing::Contains(HasSubstr("waiting for GPUs: release (run 1) of priority class "
                                            "main goes first (this job's class: pull-request)")));
  push.finish("running", Conclusion::success);
  ASSERT_THAT(push.executor.started_keys(), ElementsAre("running", "release"));
  pr.clock.now_ += 2s;
  pr.scheduler->advance();
  EXPECT_THAT(pr.executor.started_keys(), ElementsAre("lint", "test"));
  EXPECT_EQ(pr.recorder.job("test")->queue.priority, "pull-request");
  EXPECT_EQ(pr.recorder.job("test")->queue.reasons_ms,
            (std::map<std::string, std::int64_t>{{"priority", 2'000}}));
}

}  // namespace
}  // namespace kiln::engine
