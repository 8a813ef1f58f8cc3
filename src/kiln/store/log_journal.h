#pragma once
// The SQLite store's LogWriter (store.h). A committed SQLite row per line cost 50-70 us, so a
// step printing 200,000 lines spent seconds in the store. Instead each line is appended to the
// job's journal, <database>.journal/job-<id>.log, with one write() before append() returns: the
// kernel holds it from then on, so a kill -9 of kiln loses nothing already shown. A flusher
// thread commits the lines to log_chunks in batches (every `interval`, or at `batch_lines`),
// and close() commits the rest and removes the journal. A journal left by a kiln that died is
// imported by recover_journals() (open_sqlite_store calls it after mark_interrupted): the lines
// the store does not have yet are appended, then the file is removed.
//
// A record is a header line "<step index or -1> <stream> <time ms> <length>\n", the text's
// bytes and "\n"; a torn last record (power loss in the middle of a write) is dropped.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::store {

struct JournalOptions {
  std::chrono::milliseconds interval{50};
  std::size_t batch_lines = 8192;
};

// <database>.journal: where the journals of a database's running jobs are.
std::filesystem::path journal_dir(const std::filesystem::path& database);

Result<std::unique_ptr<LogWriter>> open_journaled_log_writer(Store& store,
                                                             const std::filesystem::path& dir,
                                                             std::int64_t job_id,
                                                             JournalOptions options = {});

// Imports the journals in `dir` of jobs whose run is no longer queued or running. Returns how
// many lines were added to the store.
Result<std::size_t> recover_journals(Store& store, const std::filesystem::path& dir);

std::string encode_journal_record(const LogLine& line);
void append_journal_record(const LogLine& line, std::string& out);
std::vector<LogLine> decode_journal(std::string_view data, std::int64_t job_id);

}  // namespace kiln::store
