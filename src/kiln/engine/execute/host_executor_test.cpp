#include "kiln/engine/execute/host_executor.h"

#include <stdlib.h>

#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/store.h"
#include "kiln/workflow/loader.h"

namespace kiln::engine {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

class Events final : public ExecutorEvents {
 public:
  void line(JobId, const std::string& key, std::string_view kind, std::string_view text) override {
    lines.push_back(key + " " + std::string(kind) + ": " + std::string(text));
  }
  void finished(JobId id, JobOutcome outcome) override {
    finished_ids.push_back(id);
    outcomes.push_back(std::move(outcome));
  }
  std::vector<std::string> lines;
  std::vector<JobId> finished_ids;
  std::vector<JobOutcome> outcomes;
};

// A process at its thread limit: std::thread throws std::system_error. Before the Executor, the
// exception left the scheduler with its job threads still joinable, and std::terminate ended kiln.
TEST(HostExecutor, AJobWithoutAThreadFailsAsInfrastructureAndIsRecorded) {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-exec-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  auto opened = store::open_sqlite_store(dir / "kiln.db");
  ASSERT_TRUE(opened) << opened.error().to_string();
  auto& store = **opened;
  store::Run run;
  run.repository = "owner/repo";
  run.workflow_path = "ci.yml";
  run.workflow_name = "ci";
  run.event = "push";
  run.status = store::RunStatus::running;
  auto created = store.create_run(run);
  ASSERT_TRUE(created);
  store::Job row;
  row.run_id = created->id;
  row.key = row.workflow_job_id = row.name = "build";
  row.status = store::JobStatus::queued;
  row.labels = nlohmann::json::array();
  auto job_row = store.create_job(row);
  ASSERT_TRUE(job_row);

  RunOptions options;
  RepositoryInfo repo;
  plan::Event event;
  exec::Masker masker;
  SystemClock clock;
  StoreRunRecorder recorder(store, clock, {});
  HostExecutor executor(
      {.options = &options,
       .repo = &repo,
       .event = &event,
       .store = &store,
       .recorder = &recorder,
       .masker = &masker,
       .gpus = nullptr,
       .kiln_dir = dir},
      [](std::function<void()>) -> std::thread {
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      });
  JobSpec spec;
  auto loaded = workflow::load_workflow_text(
      "on: push\njobs:\n  build: {runs-on: linux, steps: [{run: 'true'}]}\n", "ci.yml");
  ASSERT_TRUE(loaded.workflow);
  spec.workflow.workflow = *loaded.workflow;
  spec.triggered = spec.workflow;
  spec.job_id = "build";
  spec.instance.key = spec.instance.name = "build";
  spec.run_id = created->id;
  spec.job_row = *job_row;
  Events events;
  executor.start(7, spec, events);

  ASSERT_EQ(events.outcomes.size(), 1u);
  EXPECT_EQ(events.finished_ids[0], 7u);
  const auto& outcome = events.outcomes[0];
  EXPECT_EQ(outcome.stop.kind, StopReason::Kind::infrastructure);
  EXPECT_EQ(outcome.summary.conclusion, Conclusion::failure);
  EXPECT_THAT(outcome.summary.reason, HasSubstr("cannot start a thread for the job"));
  EXPECT_THAT(events.lines, Contains(HasSubstr("build error: infrastructure failure")));
  auto stored = store.get_job(*job_row);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, store::JobStatus::failure);
  EXPECT_THAT(stored->message, HasSubstr("cannot start a thread"));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(StopReason, ReadFromHowTheJobRunnerEndedTheJob) {
  JobSummary summary;
  summary.conclusion = Conclusion::success;
  EXPECT_EQ(stop_reason_of(summary).kind, StopReason::Kind::none);
  summary.conclusion = Conclusion::failure;
  summary.reason = "step 'x' failed with exit code 2";
  summary.failure = StepFailure{.kind = "exit code"};
  EXPECT_EQ(stop_reason_of(summary), (StopReason{StopReason::Kind::failed_step, summary.reason}));
  summary.failure->kind = "timeout";
  EXPECT_EQ(stop_reason_of(summary).kind, StopReason::Kind::timeout);
  summary.failure->kind = "gate";
  EXPECT_EQ(stop_reason_of(summary).kind, StopReason::Kind::gate);
  summary.failure.reset();
  summary.reason = "the job exceeded its maximum execution time of 1 minutes";
  EXPECT_EQ(stop_reason_of(summary).kind, StopReason::Kind::timeout);
  summary.conclusion = Conclusion::cancelled;
  EXPECT_EQ(stop_reason_of(summary).kind, StopReason::Kind::cancelled);
}

}  // namespace
}  // namespace kiln::engine
