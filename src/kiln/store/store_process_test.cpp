// The store under several threads and several processes: crash recovery with a real child
// process killed with SIGKILL, concurrent appends, two Store objects on one file.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "kiln/store/process_identity.h"
#include "kiln/store/sqlite_store.h"
#include "kiln/store/store_backends_test_support.h"

namespace kiln::store {
namespace {

Run running_run(const ProcessIdentity& owner) {
  Run run;
  run.repository = "/src/project";
  run.workflow_path = "ci.yml";
  run.workflow_name = "CI";
  run.event = "push";
  run.status = RunStatus::running;
  run.owner = owner;
  return run;
}

class StoreProcessTest : public testing::StoreBackendTest {
 protected:
  std::unique_ptr<Store> open() {
    auto store = try_open_store();
    EXPECT_TRUE(store) << store.error().to_string();
    return store ? std::move(*store) : nullptr;
  }
};

// Writes all of `value` to the pipe or ends the (child) process.
void write_value(int fd, std::int64_t value) {
  if (write(fd, &value, sizeof value) != static_cast<ssize_t>(sizeof value)) _exit(3);
}

// Reads one value; false at end of file.
bool read_value(int fd, std::int64_t& value) {
  auto* bytes = reinterpret_cast<char*>(&value);
  std::size_t got = 0;
  while (got < sizeof value) {
    ssize_t n = read(fd, bytes + got, sizeof value - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// The child: a stand-in for `kiln run`. It owns a run (pid 0: "the calling process"), starts a
// job and a step, then appends log lines forever, reporting on the pipe the run id, the job
// id and then the seq of every line once its append has returned (is committed).
[[noreturn]] void child_writer(const std::function<Result<std::unique_ptr<Store>>()>& open,
                               int fd) {
  auto store = open();
  if (!store) _exit(1);
  Run run;
  run.repository = "/src/project";
  run.workflow_path = "ci.yml";
  run.status = RunStatus::running;
  auto created = (*store)->create_run(run);
  if (!created) _exit(1);
  Job job;
  job.run_id = created->id;
  job.key = "build";
  job.status = JobStatus::running;
  auto job_id = (*store)->create_job(job);
  if (!job_id) _exit(1);
  Step step{.job_id = *job_id, .index = 0, .name = "make", .status = StepStatus::running};
  Step queued{.job_id = *job_id, .index = 1, .name = "test"};
  if (!(*store)->create_step(step) || !(*store)->create_step(queued)) _exit(1);
  write_value(fd, created->id);
  write_value(fd, *job_id);
  for (std::int64_t i = 0;; ++i) {
    std::vector<LogLine> lines = {{*job_id, 0, LogStream::out, fmt::format("line {}", i), 0}};
    if (i % 10 == 9) {
      lines.push_back({*job_id, 0, LogStream::err, fmt::format("line {}b", i), 0});
    }
    auto seq = lines.size() == 1 ? (*store)->append_log(lines[0]) : (*store)->append_logs(lines);
    if (!seq) _exit(2);
    write_value(fd, *seq);
  }
}

TEST_P(StoreProcessTest, KilledOwnerIsInterruptedAndKeepsEveryCommittedLine) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    child_writer([&] { return try_open_store(); }, fds[1]);
  }
  close(fds[1]);
  testing::ChildGuard guard(child);
  // Closes the read end however the test ends.
  std::unique_ptr<int, void (*)(int*)> read_end(&fds[0], [](int* fd) { close(*fd); });

  std::int64_t run_id = 0;
  std::int64_t job_id = 0;
  ASSERT_TRUE(read_value(fds[0], run_id));
  ASSERT_TRUE(read_value(fds[0], job_id));
  std::vector<std::int64_t> committed;
  std::int64_t seq = 0;
  while (committed.size() < 200 && read_value(fds[0], seq)) committed.push_back(seq);
  ASSERT_EQ(committed.size(), 200u);

  {
    // While the owner lives, another process (here: this one) opening the database leaves
    // the run alone.
    auto observer = open();
    auto run = observer->get_run(run_id);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, RunStatus::running);
    EXPECT_EQ(run->owner.pid, child);
    EXPECT_TRUE(observer->mark_interrupted(now_ms())->empty());
  }

  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  guard.release();
  ASSERT_TRUE(WIFSIGNALED(wait_status))
      << "the writer exited by itself: " << WEXITSTATUS(wait_status);
  while (read_value(fds[0], seq)) committed.push_back(seq);

  TimeMs before_open = now_ms();
  auto store = open();  // marks interrupted runs on open
  auto detail = store->get_run_detail(run_id);
  ASSERT_TRUE(detail) << detail.error().to_string();
  EXPECT_EQ(detail->run.status, RunStatus::interrupted);
  EXPECT_GE(detail->run.finished_at, before_open);
  ASSERT_EQ(detail->jobs.size(), 1u);
  EXPECT_EQ(detail->jobs[0].job.status, JobStatus::interrupted);
  EXPECT_GE(detail->jobs[0].job.finished_at, before_open);
  ASSERT_EQ(detail->jobs[0].steps.size(), 2u);
  EXPECT_EQ(detail->jobs[0].steps[0].status, StepStatus::interrupted);
  EXPECT_EQ(detail->jobs[0].steps[1].status, StepStatus::interrupted);

  // Every line whose append returned before the kill is there, in the order written.
  auto logs = store->read_logs({.run_id = run_id, .job_id = job_id});
  ASSERT_TRUE(logs);
  std::set<std::int64_t> stored;
  for (const auto& chunk : *logs) stored.insert(chunk.seq);
  for (auto reported : committed) EXPECT_TRUE(stored.count(reported)) << "lost seq " << reported;
  ASSERT_GE(logs->size(), committed.size());
  std::int64_t next_line = 0;
  for (const auto& chunk : *logs) {
    if (chunk.stream == LogStream::err) continue;
    EXPECT_EQ(chunk.text, fmt::format("line {}", next_line));
    ++next_line;
  }

  // Done once: a second pass finds nothing more to mark.
  EXPECT_TRUE(store->mark_interrupted(now_ms())->empty());
}

TEST_P(StoreProcessTest, OnlyRunsOfDeadOwnersOnThisHostAreInterrupted) {
  auto store = open();
  auto self = current_process();
  ProcessIdentity reused_pid = self;
  reused_pid.start_time += 1;  // this pid, but not the process that started the run
  ProcessIdentity other_host = reused_pid;
  other_host.host = self.host + "-elsewhere";

  auto alive = *store->create_run(running_run(self));
  auto stale = *store->create_run(running_run(reused_pid));
  auto remote = *store->create_run(running_run(other_host));
  auto queued_stale = running_run(reused_pid);
  queued_stale.status = RunStatus::queued;
  auto queued = *store->create_run(queued_stale);
  auto finished_stale = running_run(reused_pid);
  finished_stale.status = RunStatus::success;
  auto finished = *store->create_run(finished_stale);

  // A finished job of the stale run keeps its result.
  Job done_job{.run_id = stale.id, .key = "done", .status = JobStatus::success};
  done_job.finished_at = 7;
  auto done_id = *store->create_job(done_job);
  auto waiting_id =
      *store->create_job({.run_id = stale.id, .key = "waiting", .status = JobStatus::waiting});

  auto marked = store->mark_interrupted(1234);
  ASSERT_TRUE(marked) << marked.error().to_string();
  std::vector<std::int64_t> expected = {stale.id, queued.id};
  EXPECT_EQ(*marked, expected);

  EXPECT_EQ(store->get_run(alive.id)->status, RunStatus::running);
  EXPECT_EQ(store->get_run(remote.id)->status, RunStatus::running);
  EXPECT_EQ(store->get_run(finished.id)->status, RunStatus::success);
  EXPECT_EQ(store->get_run(stale.id)->status, RunStatus::interrupted);
  EXPECT_EQ(store->get_run(stale.id)->finished_at, 1234);
  EXPECT_EQ(store->get_run(queued.id)->status, RunStatus::interrupted);
  EXPECT_EQ(store->get_job(done_id)->status, JobStatus::success);
  EXPECT_EQ(store->get_job(done_id)->finished_at, 7);
  EXPECT_EQ(store->get_job(waiting_id)->status, JobStatus::interrupted);
}

TEST_P(StoreProcessTest, ConcurrentAppendsFromManyThreads) {
  auto store = open();
  auto run = *store->create_run(running_run(current_process()));
  constexpr int k_threads = 8;
  constexpr int k_lines = 250;
  // Threads 0 and 1 share a job, like the stdout and stderr readers of one step.
  std::vector<std::int64_t> jobs;
  for (int t = 0; t < k_threads - 1; ++t) {
    jobs.push_back(*store->create_job({.run_id = run.id, .key = fmt::format("job {}", t)}));
  }
  auto job_of = [&](int thread) { return jobs[static_cast<std::size_t>(std::max(0, thread - 1))]; };

  std::vector<std::thread> threads;
  std::vector<int> failures(k_threads, 0);
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_lines; ++i) {
        LogLine line{job_of(t), 0, t == 0 ? LogStream::err : LogStream::out,
                     fmt::format("{} {}", t, i), 0};
        bool ok = true;
        if (i % 5 == 4) {  // every fifth write is a batch of two
          std::vector<LogLine> batch = {line, line};
          batch[1].text += " second";
          ok = static_cast<bool>(store->append_logs(batch));
        } else {
          ok = static_cast<bool>(store->append_log(line));
        }
        if (!ok) ++failures[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < k_threads; ++t) EXPECT_EQ(failures[static_cast<std::size_t>(t)], 0);

  auto logs = *store->read_logs({.run_id = run.id});
  constexpr std::size_t k_per_thread = k_lines + k_lines / 5;
  ASSERT_EQ(logs.size(), k_threads * k_per_thread);
  // Each thread's lines appear in the order it wrote them, and seqs never repeat.
  std::map<int, std::vector<std::string>> seen;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    if (i > 0) {
      ASSERT_LT(logs[i - 1].seq, logs[i].seq);
    }
    int thread = std::stoi(logs[i].text);
    EXPECT_EQ(logs[i].job_id, job_of(thread));
    seen[thread].push_back(logs[i].text);
  }
  for (int t = 0; t < k_threads; ++t) {
    std::vector<std::string> expected;
    for (int i = 0; i < k_lines; ++i) {
      expected.push_back(fmt::format("{} {}", t, i));
      if (i % 5 == 4) expected.push_back(fmt::format("{} {} second", t, i));
    }
    EXPECT_EQ(seen[t], expected) << "thread " << t;
  }
  auto shared = *store->read_logs({.run_id = run.id, .job_id = jobs[0]});
  EXPECT_EQ(shared.size(), 2 * k_per_thread);
}

TEST_P(StoreProcessTest, TwoStoresOnOneFileSeeEachOther) {
  auto writer = open();  // like `kiln run`
  auto reader = open();  // like `kiln runs` or `kiln logs` meanwhile
  ASSERT_TRUE(writer && reader);
  auto run = *writer->create_run(running_run(current_process()));
  auto job = *writer->create_job({.run_id = run.id, .key = "build"});

  auto seen = reader->get_run(run.id);
  ASSERT_TRUE(seen) << seen.error().to_string();
  EXPECT_EQ(seen->status, RunStatus::running);
  ASSERT_TRUE(reader->set_job_status(job, JobStatus::running, 5));
  EXPECT_EQ(writer->get_job(job)->status, JobStatus::running);

  // Both write at once; a third thread reads the other's lines as they arrive.
  constexpr int k_lines = 200;
  auto write_lines = [&](Store& store, std::string_view who, int& errors) {
    for (int i = 0; i < k_lines; ++i) {
      if (!store.append_log({job, 0, LogStream::out, fmt::format("{} {}", who, i), 0})) ++errors;
    }
  };
  int writer_errors = 0;
  int reader_errors = 0;
  std::thread a([&] { write_lines(*writer, "writer", writer_errors); });
  std::thread b([&] { write_lines(*reader, "reader", reader_errors); });
  std::atomic<bool> writing{true};
  std::size_t tailed = 0;
  std::thread tail([&] {
    std::int64_t after = 0;
    auto poll = [&] {
      auto chunks = reader->read_logs({.run_id = run.id, .after_seq = after});
      if (!chunks) return false;
      if (!chunks->empty()) after = chunks->back().seq;
      tailed += chunks->size();
      return true;
    };
    while (writing.load() && poll()) {
    }
    poll();  // what was committed after the last poll
  });
  a.join();
  b.join();
  writing = false;
  tail.join();
  EXPECT_EQ(writer_errors, 0);
  EXPECT_EQ(reader_errors, 0);
  // The tail, reading only what came after its last seq, saw every line exactly once.
  EXPECT_EQ(tailed, 2u * k_lines);

  auto from_writer = *writer->read_logs({.run_id = run.id});
  auto from_reader = *reader->read_logs({.run_id = run.id});
  EXPECT_EQ(from_writer.size(), 2u * k_lines);
  ASSERT_EQ(from_reader.size(), from_writer.size());
  for (std::size_t i = 0; i < from_writer.size(); ++i) {
    EXPECT_EQ(from_writer[i].seq, from_reader[i].seq);
  }
  ASSERT_TRUE(writer->set_run_status(run.id, RunStatus::success, 9));
  auto listed = reader->list_runs({.limit = 1});
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().status, RunStatus::success);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreProcessTest, testing::backends(), testing::backend_name);

}  // namespace
}  // namespace kiln::store
