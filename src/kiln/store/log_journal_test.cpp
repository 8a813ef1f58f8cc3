#include "kiln/store/log_journal.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::store {
namespace {

class LogJournalTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    store_ = open();
    store::Run run;
    run.repository = "/src/project";
    run.workflow_path = ".github/workflows/ci.yml";
    run.event = "push";
    run.status = RunStatus::running;
    run_id_ = store_->create_run(run)->id;
    store::Job job;
    job.run_id = run_id_;
    job.key = "build";
    job.workflow_job_id = "build";
    job_id_ = *store_->create_job(job);
  }

  std::unique_ptr<Store> open() {
    auto store = open_sqlite_store(db_path());
    EXPECT_TRUE(store) << store.error().to_string();
    return store ? std::move(*store) : nullptr;
  }

  std::vector<std::string> stored_texts(Store& store) {
    LogQuery query;
    query.run_id = run_id_;
    query.job_id = job_id_;
    std::vector<std::string> texts;
    auto chunks = store.read_logs(query);
    EXPECT_TRUE(chunks) << chunks.error().to_string();
    if (!chunks) return texts;
    for (const auto& chunk : *chunks) texts.push_back(chunk.text);
    return texts;
  }

  std::filesystem::path journal_file() const {
    return journal_dir(db_path()) / fmt::format("job-{}.log", job_id_);
  }

  LogLine line(std::string text, std::optional<int> step = 0) {
    return {job_id_, step, LogStream::out, std::move(text), 1'700'000'000'000};
  }

  std::unique_ptr<Store> store_;
  std::int64_t run_id_ = 0;
  std::int64_t job_id_ = 0;
};

TEST(LogJournalRecords, RoundTripTextWithSpacesNewlinesAndNoStep) {
  std::vector<LogLine> lines = {{7, std::nullopt, LogStream::system, "Set up job", 5},
                                {7, 3, LogStream::err, "two\nlines and  spaces ", 6},
                                {7, 0, LogStream::out, "", 7}};
  std::string data;
  for (const auto& l : lines) data += encode_journal_record(l);
  auto decoded = decode_journal(data, 7);
  ASSERT_EQ(decoded.size(), 3u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(decoded[i].job_id, 7);
    EXPECT_EQ(decoded[i].step_index, lines[i].step_index);
    EXPECT_EQ(decoded[i].stream, lines[i].stream);
    EXPECT_EQ(decoded[i].text, lines[i].text);
    EXPECT_EQ(decoded[i].time, lines[i].time);
  }
}

TEST(LogJournalRecords, ATornLastRecordIsDropped) {
  std::string data = encode_journal_record({1, 0, LogStream::out, "whole", 1});
  std::string torn = encode_journal_record({1, 0, LogStream::out, "torn in the middle", 2});
  for (std::size_t cut = 0; cut < torn.size(); ++cut) {
    auto decoded = decode_journal(data + torn.substr(0, cut), 1);
    ASSERT_EQ(decoded.size(), 1u) << "cut at " << cut;
    EXPECT_EQ(decoded[0].text, "whole");
  }
  EXPECT_EQ(decode_journal("garbage header\nxyz\n", 1).size(), 0u);
}

TEST_F(LogJournalTest, LinesAreInTheJournalAtOnceAndInTheStoreAfterClose) {
  JournalOptions options;
  options.interval = std::chrono::hours(1);  // only close() commits here
  auto writer = open_journaled_log_writer(*store_, journal_dir(db_path()), job_id_, options);
  ASSERT_TRUE(writer) << writer.error().to_string();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*writer)->append(line(fmt::format("line {}", i))));
  std::ifstream in(journal_file(), std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(decode_journal(data, job_id_).size(), 100u) << "each line is written when appended";
  EXPECT_TRUE(stored_texts(*store_).empty()) << "and committed in a batch, not one by one";
  ASSERT_TRUE((*writer)->close());
  auto texts = stored_texts(*store_);
  ASSERT_EQ(texts.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(texts[i], fmt::format("line {}", i));
  EXPECT_FALSE(std::filesystem::exists(journal_file())) << "a closed job's journal is removed";
  ASSERT_TRUE((*writer)->append(line("after close")));
  EXPECT_EQ(stored_texts(*store_).back(), "after close");
}

TEST_F(LogJournalTest, ABlockOfLinesIsInTheJournalWhenAppendAllReturns) {
  JournalOptions options;
  options.interval = std::chrono::hours(1);
  auto writer = open_journaled_log_writer(*store_, journal_dir(db_path()), job_id_, options);
  ASSERT_TRUE(writer) << writer.error().to_string();
  std::vector<LogLine> block;
  for (int i = 0; i < 50; ++i) block.push_back(line(fmt::format("block {}", i), i % 2));
  ASSERT_TRUE((*writer)->append_all(block));
  ASSERT_TRUE((*writer)->append(line("single")));
  std::ifstream in(journal_file(), std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto journal = decode_journal(data, job_id_);
  ASSERT_EQ(journal.size(), 51u);
  EXPECT_EQ(journal[49].text, "block 49");
  EXPECT_EQ(journal[49].step_index, 1);
  EXPECT_EQ(journal[50].text, "single");
  EXPECT_TRUE(stored_texts(*store_).empty());
  ASSERT_TRUE((*writer)->close());
  auto texts = stored_texts(*store_);
  ASSERT_EQ(texts.size(), 51u);
  EXPECT_EQ(texts[0], "block 0");
  EXPECT_EQ(texts[50], "single");
}

TEST_F(LogJournalTest, TheFlusherCommitsWithinItsInterval) {
  JournalOptions options;
  options.interval = std::chrono::milliseconds(10);
  auto writer = open_journaled_log_writer(*store_, journal_dir(db_path()), job_id_, options);
  ASSERT_TRUE(writer);
  ASSERT_TRUE((*writer)->append(line("soon")));
  for (int i = 0; i < 500 && stored_texts(*store_).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(stored_texts(*store_), std::vector<std::string>{"soon"});
}

TEST_F(LogJournalTest, AFullBatchIsCommittedWithoutWaiting) {
  JournalOptions options;
  options.interval = std::chrono::hours(1);
  options.batch_lines = 3;
  auto writer = open_journaled_log_writer(*store_, journal_dir(db_path()), job_id_, options);
  ASSERT_TRUE(writer);
  for (auto text : {"a", "b", "c", "d"}) ASSERT_TRUE((*writer)->append(line(text)));
  EXPECT_EQ(stored_texts(*store_), (std::vector<std::string>{"a", "b", "c"}));
}

// A kill -9 of kiln: the journal holds every line, the store the batches committed before.
TEST_F(LogJournalTest, RecoveryImportsWhatADeadKilnHadNotCommitted) {
  ASSERT_TRUE(store_->append_log(line("committed 0")));
  ASSERT_TRUE(store_->append_log(line("committed 1")));
  std::filesystem::create_directories(journal_dir(db_path()));
  {
    std::ofstream out(journal_file(), std::ios::binary);
    for (auto text : {"committed 0", "committed 1", "shown, not committed", "last"})
      out << encode_journal_record(line(text, std::nullopt));
    out << "0 0 1 999\nto";  // the record being written when it died
  }
  // The run is still running: its kiln may be alive, its journal is left alone.
  auto left = recover_journals(*store_, journal_dir(db_path()));
  ASSERT_TRUE(left);
  EXPECT_EQ(*left, 0u);
  EXPECT_TRUE(std::filesystem::exists(journal_file()));

  ASSERT_TRUE(store_->set_run_status(run_id_, RunStatus::interrupted, 0));
  store_.reset();
  store_ = open();  // what the next kiln does
  EXPECT_EQ(stored_texts(*store_), (std::vector<std::string>{"committed 0", "committed 1",
                                                             "shown, not committed", "last"}));
  EXPECT_FALSE(std::filesystem::exists(journal_file()));
}

}  // namespace
}  // namespace kiln::store
