#include "kiln/store/sqlite_store.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/store/migrations.h"
#include "kiln/store/process_identity.h"
#include "kiln/store/sqlite.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

Run sample_run(std::string workflow = ".github/workflows/ci.yml") {
  Run run;
  run.repository = "/src/project";
  run.workflow_path = std::move(workflow);
  run.workflow_name = "CI";
  run.event = "push";
  run.ref = "refs/heads/main";
  run.sha = "0123456789abcdef0123456789abcdef01234567";
  run.status = RunStatus::queued;
  run.created_at = 1'700'000'000'000;
  run.extra = {{"inputs", {{"size", "large"}}}, {"jobs", 3}};
  return run;
}

Job sample_job(std::int64_t run_id, std::string key) {
  Job job;
  job.run_id = run_id;
  job.key = std::move(key);
  job.workflow_job_id = "build";
  job.name = "Build";
  job.matrix = {{"os", "linux"}, {"python", "3.11"}};
  job.labels = {"self-hosted", "gpu:2"};
  return job;
}

class StoreTest : public testing::StoreBackendTest {
 protected:
  std::unique_ptr<Store> open() { return open_store(); }

  // The version the database records (SQLite's user_version, PostgreSQL's kiln_schema).
  std::int64_t schema_version() {
    auto db = raw_database();
    auto version = db->schema_version();
    EXPECT_TRUE(version) << version.error().to_string();
    return version ? *version : -1;
  }
  void set_schema_version(std::int64_t version) {
    auto db = raw_database();
    ASSERT_TRUE(db->set_schema_version(version));
  }
};

// What only SQLite's file has: its directory, its WAL, a file that is not a database.
class SqliteFileTest : public testing::TempDirTest {};

TEST_F(SqliteFileTest, OpenCreatesDirectoriesAndTheLatestSchemaInWalMode) {
  ASSERT_FALSE(std::filesystem::exists(db_path().parent_path()));
  auto store = open_sqlite_store(db_path());
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_TRUE(std::filesystem::exists(db_path()));
  auto db = sqlite::Database::open(db_path(), 1000);
  ASSERT_TRUE(db);
  EXPECT_EQ(*(*db)->schema_version(), latest_schema_version());
  EXPECT_TRUE(std::filesystem::exists(db_path().string() + "-wal"));
}

TEST_P(StoreTest, ReopeningKeepsEverything) {
  std::int64_t run_id = 0;
  std::int64_t job_id = 0;
  {
    auto store = open();
    auto run = store->create_run(sample_run());
    ASSERT_TRUE(run) << run.error().to_string();
    run_id = run->id;
    auto job = store->create_job(sample_job(run_id, "build (linux, 3.11)"));
    ASSERT_TRUE(job);
    job_id = *job;
    ASSERT_TRUE(store->append_log({job_id, std::nullopt, LogStream::system, "Set up job", 5}));
    ASSERT_TRUE(store->set_run_status(run_id, RunStatus::success, 10));
  }
  auto store = open();
  auto run = store->get_run(run_id);
  ASSERT_TRUE(run) << run.error().to_string();
  EXPECT_EQ(run->status, RunStatus::success);
  EXPECT_EQ(run->extra, sample_run().extra);
  auto logs = store->read_logs({.run_id = run_id});
  ASSERT_TRUE(logs);
  ASSERT_EQ(logs->size(), 1u);
  EXPECT_EQ((*logs)[0].text, "Set up job");
  EXPECT_EQ(schema_version(), latest_schema_version());
}

TEST_P(StoreTest, DatabaseFromAFutureKilnIsRefused) {
  {
    ASSERT_TRUE(open());
  }
  set_schema_version(latest_schema_version() + 1);
  auto store = try_open_store();
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::unsupported);
  EXPECT_NE(store.error().message.find(postgres() ? url_ : db_path().string()), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("newer kiln"), std::string::npos) << store.error().message;
}

TEST_F(SqliteFileTest, NotADatabaseIsAnIoErrorWithSqlitesMessage) {
  std::filesystem::create_directories(db_path().parent_path());
  std::ofstream(db_path()) << std::string(4096, 'x');
  auto store = open_sqlite_store(db_path());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::io_error);
  EXPECT_NE(store.error().message.find("file is not a database"), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("in: PRAGMA"), std::string::npos) << store.error().message;
}

TEST_P(StoreTest, RunNumbersCountPerWorkflow) {
  auto store = open();
  auto a1 = store->create_run(sample_run("a.yml"));
  auto a2 = store->create_run(sample_run("a.yml"));
  auto b1 = store->create_run(sample_run("b.yml"));
  ASSERT_TRUE(a1 && a2 && b1);
  EXPECT_EQ(a1->number, 1);
  EXPECT_EQ(a2->number, 2);
  EXPECT_EQ(b1->number, 1);
  EXPECT_LT(a1->id, a2->id);
  // No owner given: the calling process owns it.
  EXPECT_EQ(a1->owner, current_process());
}

TEST_P(StoreTest, ListRunsNewestFirstWithLimitFilterAndPaging) {
  auto store = open();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    auto run = sample_run();
    if (i == 2) run.repository = "/src/other";
    ids.push_back(store->create_run(run)->id);
  }
  auto newest = store->list_runs({.limit = 3});
  ASSERT_TRUE(newest);
  ASSERT_EQ(newest->size(), 3u);
  EXPECT_EQ((*newest)[0].id, ids[4]);
  EXPECT_EQ((*newest)[1].id, ids[3]);
  EXPECT_EQ((*newest)[2].id, ids[2]);

  auto project = store->list_runs({.limit = 0, .repository = "/src/project"});
  ASSERT_EQ(project->size(), 4u);
  for (const auto& run : *project) EXPECT_NE(run.id, ids[2]);

  auto older = store->list_runs({.limit = 10, .before_id = ids[3]});
  ASSERT_EQ(older->size(), 3u);
  EXPECT_EQ(older->front().id, ids[2]);
  EXPECT_EQ(older->back().id, ids[0]);
}

TEST_P(StoreTest, StatusChangesSetTimesOnce) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  ASSERT_TRUE(store->set_run_status(run.id, RunStatus::running, 100));
  ASSERT_TRUE(store->set_run_status(run.id, RunStatus::running, 150));  // no restart
  auto running = *store->get_run(run.id);
  EXPECT_EQ(running.started_at, 100);
  EXPECT_EQ(running.finished_at, 0);
  ASSERT_TRUE(store->set_run_status(run.id, RunStatus::failure, 200));
  auto done = *store->get_run(run.id);
  EXPECT_EQ(done.status, RunStatus::failure);
  EXPECT_EQ(done.started_at, 100);
  EXPECT_EQ(done.finished_at, 200);

  auto job_id = *store->create_job(sample_job(run.id, "j"));
  ASSERT_TRUE(store->set_job_status(job_id, JobStatus::waiting, 110));
  EXPECT_EQ(store->get_job(job_id)->started_at, 0);
  ASSERT_TRUE(store->set_job_status(job_id, JobStatus::running, 120));
  ASSERT_TRUE(store->set_job_status(job_id, JobStatus::skipped, 130));
  auto job = *store->get_job(job_id);
  EXPECT_EQ(job.status, JobStatus::skipped);
  EXPECT_EQ(job.started_at, 120);
  EXPECT_EQ(job.finished_at, 130);
}

TEST_P(StoreTest, RunDetailRoundTripsJobsAndSteps) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  run.status = RunStatus::running;
  run.started_at = 1'700'000'000'500;
  run.extra["plan"] = {{"jobs", {"build", "test"}}};
  ASSERT_TRUE(store->update_run(run));

  Job build = sample_job(run.id, "build (linux, 3.11)");
  build.id = *store->create_job(build);
  Job test = sample_job(run.id, "test");
  test.workflow_job_id = "test";
  test.matrix = nullptr;
  test.id = *store->create_job(test);

  build.status = JobStatus::failure;
  build.conclusion = Conclusion::success;  // continue-on-error: needs sees success
  build.outputs = {{"wheel", "dist/x.whl"}};
  build.started_at = 1;
  build.finished_at = 2;
  build.exit_code = 3;
  build.message = "step 'compile' failed";
  build.extra = {{"gpus", {"GPU-1", "GPU-2"}}};
  build.failure_class = FailureClass::gpu_fault;
  build.failure_evidence = "GPU 0 (GPU-1): Xid 79: GPU has fallen off the bus";
  ASSERT_TRUE(store->update_job(build));

  // Steps created out of order come back by index.
  Step second{.job_id = build.id, .index = 1, .name = "compile"};
  second.status = StepStatus::failure;
  second.outcome = Conclusion::failure;
  second.conclusion = Conclusion::success;
  second.exit_code = 3;
  second.outputs = {{"log", "build.log"}};
  second.id = *store->create_step(second);
  Step first{.job_id = build.id, .index = 0, .name = "checkout"};
  first.id = *store->create_step(first);
  first.status = StepStatus::success;
  first.outcome = first.conclusion = Conclusion::success;
  first.exit_code = 0;
  first.started_at = 5;
  first.finished_at = 6;
  ASSERT_TRUE(store->update_step(first));

  auto detail = store->get_run_detail(run.id);
  ASSERT_TRUE(detail) << detail.error().to_string();
  EXPECT_EQ(detail->run.status, RunStatus::running);
  EXPECT_EQ(detail->run.started_at, run.started_at);
  EXPECT_EQ(detail->run.extra, run.extra);
  ASSERT_EQ(detail->jobs.size(), 2u);

  const Job& got = detail->jobs[0].job;
  EXPECT_EQ(got.id, build.id);
  EXPECT_EQ(got.key, "build (linux, 3.11)");
  EXPECT_EQ(got.status, JobStatus::failure);
  EXPECT_EQ(got.conclusion, Conclusion::success);
  EXPECT_EQ(got.matrix, build.matrix);
  EXPECT_EQ(got.labels, build.labels);
  EXPECT_EQ(got.outputs, build.outputs);
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_EQ(got.message, build.message);
  EXPECT_EQ(got.extra, build.extra);
  EXPECT_EQ(got.failure_class, FailureClass::gpu_fault);
  EXPECT_EQ(got.failure_evidence, build.failure_evidence);
  EXPECT_EQ(got.finished_at, 2);

  const auto& steps = detail->jobs[0].steps;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "checkout");
  EXPECT_EQ(steps[0].status, StepStatus::success);
  EXPECT_EQ(steps[0].exit_code, 0);
  EXPECT_EQ(steps[0].started_at, 5);
  EXPECT_EQ(steps[1].name, "compile");
  EXPECT_EQ(steps[1].outcome, Conclusion::failure);
  EXPECT_EQ(steps[1].conclusion, Conclusion::success);
  EXPECT_EQ(steps[1].outputs, second.outputs);

  EXPECT_EQ(detail->jobs[1].job.key, "test");
  EXPECT_TRUE(detail->jobs[1].job.matrix.is_null());
  EXPECT_FALSE(detail->jobs[1].job.conclusion.has_value());
  EXPECT_FALSE(detail->jobs[1].job.exit_code.has_value());
  EXPECT_EQ(detail->jobs[1].job.failure_class, FailureClass::none);  // stored as ''
  EXPECT_EQ(detail->jobs[1].job.failure_evidence, "");
  EXPECT_TRUE(detail->jobs[1].steps.empty());
}

TEST_P(StoreTest, DuplicateKeysAreInvalidInput) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  auto job_id = *store->create_job(sample_job(run.id, "same"));
  auto twice = store->create_job(sample_job(run.id, "same"));
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ErrorCode::invalid_input);
  EXPECT_NE(twice.error().message.find("'same'"), std::string::npos);

  ASSERT_TRUE(store->create_step({.job_id = job_id, .index = 0, .name = "a"}));
  auto step = store->create_step({.job_id = job_id, .index = 0, .name = "b"});
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, ErrorCode::invalid_input);

  // The same key in another run is fine.
  auto other = *store->create_run(sample_run());
  EXPECT_TRUE(store->create_job(sample_job(other.id, "same")));
}

TEST_P(StoreTest, UnknownIdsAreNotFound) {
  auto store = open();
  constexpr std::int64_t k_missing = 424242;
  auto expect_not_found = [](const auto& result, std::string_view what) {
    ASSERT_FALSE(result) << what;
    EXPECT_EQ(result.error().code, ErrorCode::not_found) << what;
    EXPECT_NE(result.error().message.find("424242"), std::string::npos)
        << what << ": " << result.error().message;
  };
  expect_not_found(store->get_run(k_missing), "get_run");
  expect_not_found(store->get_run_detail(k_missing), "get_run_detail");
  store::Run run = sample_run();
  run.id = k_missing;
  expect_not_found(store->update_run(run), "update_run");
  expect_not_found(store->set_run_status(k_missing, RunStatus::running, 1), "set_run_status");
  expect_not_found(store->list_jobs(k_missing), "list_jobs");
  expect_not_found(store->create_job(sample_job(k_missing, "x")), "create_job");
  expect_not_found(store->get_job(k_missing), "get_job");
  Job job = sample_job(1, "x");
  job.id = k_missing;
  expect_not_found(store->update_job(job), "update_job");
  expect_not_found(store->set_job_status(k_missing, JobStatus::running, 1), "set_job_status");
  expect_not_found(store->create_step({.job_id = k_missing}), "create_step");
  expect_not_found(store->update_step({.id = k_missing}), "update_step");
  expect_not_found(store->list_steps(k_missing), "list_steps");
  expect_not_found(store->append_log({.job_id = k_missing, .text = "x"}), "append_log");
  expect_not_found(store->read_logs({.run_id = k_missing}), "read_logs");
  expect_not_found(store->create_artifact({.run_id = k_missing, .name = "a"}), "create_artifact");
  expect_not_found(store->list_artifacts(k_missing), "list_artifacts");
  expect_not_found(store->find_artifact(k_missing, "a"), "find_artifact");
  expect_not_found(store->delete_artifact(k_missing), "delete_artifact");

  // A batch with one bad line writes none of it.
  auto real = *store->create_run(sample_run());
  auto real_job = *store->create_job(sample_job(real.id, "j"));
  std::vector<LogLine> batch = {{.job_id = real_job, .text = "kept?"},
                                {.job_id = k_missing, .text = "bad"}};
  expect_not_found(store->append_logs(batch), "append_logs");
  EXPECT_TRUE(store->read_logs({.run_id = real.id})->empty());
  // A job of another run is not found in this one.
  auto other = *store->create_run(sample_run());
  auto wrong = store->read_logs({.run_id = other.id, .job_id = real_job});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ErrorCode::not_found);
}

TEST_P(StoreTest, LogsComeBackInOrderFromASequenceNumber) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  auto a = *store->create_job(sample_job(run.id, "a"));
  auto b = *store->create_job(sample_job(run.id, "b"));
  ASSERT_TRUE(store->append_log({a, std::nullopt, LogStream::system, "Set up job", 1}));
  ASSERT_TRUE(store->append_log({a, 0, LogStream::out, "a out", 2}));
  std::vector<LogLine> batch = {{b, 0, LogStream::err, "b err 1", 3},
                                {b, 0, LogStream::err, "b err 2\nand more", 4}};
  auto last = store->append_logs(batch);
  ASSERT_TRUE(last);
  ASSERT_TRUE(store->append_log({a, 1, LogStream::out, "a again", 5}));

  auto all = *store->read_logs({.run_id = run.id});
  ASSERT_EQ(all.size(), 5u);
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < all.size(); ++i) {
    texts.push_back(all[i].text);
    if (i > 0) {
      EXPECT_LT(all[i - 1].seq, all[i].seq);
    }
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"Set up job", "a out", "b err 1", "b err 2\nand more",
                                             "a again"}));
  EXPECT_EQ(all[3].seq, *last);
  EXPECT_FALSE(all[0].step_index.has_value());
  EXPECT_EQ(all[0].stream, LogStream::system);
  EXPECT_EQ(all[2].stream, LogStream::err);
  EXPECT_EQ(all[2].job_id, b);
  EXPECT_EQ(all[4].step_index, 1);
  EXPECT_EQ(all[4].time, 5);

  auto of_a = *store->read_logs({.run_id = run.id, .job_id = a});
  ASSERT_EQ(of_a.size(), 3u);
  EXPECT_EQ(of_a[2].text, "a again");

  auto tail = *store->read_logs({.run_id = run.id, .after_seq = all[1].seq});
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(tail[0].text, "b err 1");
  auto limited = *store->read_logs({.run_id = run.id, .after_seq = all[1].seq, .limit = 1});
  ASSERT_EQ(limited.size(), 1u);
  EXPECT_EQ(limited[0].seq, all[2].seq);
  EXPECT_TRUE(store->read_logs({.run_id = run.id, .after_seq = all[4].seq})->empty());
}

TEST_P(StoreTest, ArtifactsByRunAndName) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  auto job = *store->create_job(sample_job(run.id, "j"));
  Artifact wheel{.run_id = run.id,
                 .job_id = job,
                 .name = "wheel",
                 .path = "/a/wheel",
                 .size_bytes = 1234,
                 .file_count = 2,
                 .created_at = 1000,
                 .retention_days = 2};
  auto wheel_id = store->create_artifact(wheel);
  ASSERT_TRUE(wheel_id) << wheel_id.error().to_string();
  Artifact logs{.run_id = run.id, .name = "logs", .path = "/a/logs", .created_at = 1000};
  ASSERT_TRUE(store->create_artifact(logs));

  auto found = store->find_artifact(run.id, "wheel");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, *wheel_id);
  EXPECT_EQ(found->job_id, job);
  EXPECT_EQ(found->size_bytes, 1234);
  EXPECT_EQ(found->file_count, 2);
  EXPECT_EQ(found->expires_at, 1000 + 2 * 24 * 3600 * 1000LL);

  auto listed = *store->list_artifacts(run.id);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name, "logs");
  EXPECT_FALSE(listed[0].job_id.has_value());
  EXPECT_EQ(listed[0].expires_at, 0);

  auto duplicate = store->create_artifact(wheel);
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, ErrorCode::invalid_input);

  auto missing = store->find_artifact(run.id, "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);

  EXPECT_TRUE(store->list_expired_artifacts(1000 + 2 * 24 * 3600 * 1000LL - 1)->empty());
  auto expired = *store->list_expired_artifacts(1000 + 2 * 24 * 3600 * 1000LL);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].name, "wheel");

  // Overwrite: delete, then the name is free again.
  ASSERT_TRUE(store->delete_artifact(*wheel_id));
  EXPECT_TRUE(store->create_artifact(wheel));
}

TEST_P(StoreTest, TextIsStoredExactly) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  auto job = *store->create_job(sample_job(run.id, "j"));
  std::string tricky = "quote ' \" ; DROP TABLE runs; -- \t tab, ünïcödé, ***";
  tricky.push_back('\0');
  tricky += "after nul";
  ASSERT_TRUE(store->append_log({.job_id = job, .text = tricky}));
  auto logs = *store->read_logs({.run_id = run.id});
  ASSERT_EQ(logs.size(), 1u);
  if (postgres()) {
    // PostgreSQL's text holds no NUL byte: it becomes U+FFFD (postgres_dialect.h).
    std::string replaced = tricky;
    replaced.replace(replaced.find('\0'), 1, "\xEF\xBF\xBD");
    EXPECT_EQ(logs[0].text, replaced);
  } else {
    EXPECT_EQ(logs[0].text, tricky);
  }
  EXPECT_TRUE(store->get_run(run.id));  // the table is still there
}

TEST_P(StoreTest, InvalidUtf8IsKeptAsALine) {
  auto store = open();
  auto run = *store->create_run(sample_run());
  auto job = *store->create_job(sample_job(run.id, "j"));
  const std::string bytes = "progress \xff\xfe 50% \xe2\x82";
  ASSERT_TRUE(store->append_log({.job_id = job, .text = bytes}));
  auto logs = *store->read_logs({.run_id = run.id});
  ASSERT_EQ(logs.size(), 1u);
  // SQLite keeps the bytes; PostgreSQL refuses invalid UTF-8, so each bad byte is U+FFFD.
  EXPECT_EQ(logs[0].text, postgres() ? "progress \xEF\xBF\xBD\xEF\xBF\xBD 50% "
                                       "\xEF\xBF\xBD\xEF\xBF\xBD"
                                     : bytes);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
