#include "kiln/store/log_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace kiln::store {
namespace {

Status write_all(int fd, std::string_view data, const std::filesystem::path& file) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(ErrorCode::io_error, "cannot write the log journal {}: {}", file.string(),
                  std::strerror(errno));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

class JournaledLogWriter final : public LogWriter {
 public:
  JournaledLogWriter(Store& store, std::filesystem::path file, int fd, JournalOptions options)
      : store_(store), file_(std::move(file)), fd_(fd), options_(options) {
    flusher_ = std::thread([this] { flush_loop(); });
  }
  ~JournaledLogWriter() override { (void)close(); }

  Status append(const LogLine& line) override { return append_all(std::span(&line, 1)); }

  // The lines' records go to the journal with one write(): a block of a step's output costs one
  // system call, not one a line.
  Status append_all(std::span<const LogLine> lines) override {
    if (lines.empty()) return take_error();
    std::string records;
    for (const auto& line : lines) append_journal_record(line, records);
    bool full = false;
    {
      std::unique_lock lock(mutex_);
      if (closed_) {
        lock.unlock();
        auto stored = store_.append_logs(lines);
        if (!stored) return std::unexpected(stored.error());
        return {};
      }
      const bool was_empty = pending_.empty();
      pending_.insert(pending_.end(), lines.begin(), lines.end());
      if (auto written = write_all(fd_, records, file_); !written) {
        // Without its journal a line is committed at once, as durable, only slower.
        full = true;
      } else {
        full = pending_.size() >= options_.batch_lines;
        if (was_empty) wake_.notify_one();
      }
    }
    if (full) return flush();
    return take_error();
  }

  Status flush() override {
    // One flush at a time keeps the batches in order; appends go on during the commit.
    std::lock_guard order(flush_mutex_);
    std::vector<LogLine> batch;
    {
      std::lock_guard lock(mutex_);
      batch.swap(pending_);
    }
    if (batch.empty()) return take_error();
    if (auto stored = store_.append_logs(batch); !stored) {
      // Put them back in front: the next flush (or recovery from the journal) retries.
      std::lock_guard lock(mutex_);
      pending_.insert(pending_.begin(), std::make_move_iterator(batch.begin()),
                      std::make_move_iterator(batch.end()));
      return std::unexpected(stored.error());
    }
    return take_error();
  }

  Status close() override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return {};
      closed_ = true;
    }
    wake_.notify_one();
    if (flusher_.joinable()) flusher_.join();
    auto flushed = flush();
    ::close(fd_);
    // A journal whose lines could not be committed stays, for recovery to import.
    if (flushed) {
      std::error_code ec;
      std::filesystem::remove(file_, ec);
    }
    return flushed;
  }

 private:
  void flush_loop() {
    std::unique_lock lock(mutex_);
    while (!closed_) {
      wake_.wait(lock, [this] { return closed_ || !pending_.empty(); });
      if (closed_) break;
      wake_.wait_for(lock, options_.interval, [this] { return closed_; });
      if (closed_) break;
      lock.unlock();
      if (auto flushed = flush(); !flushed) {
        std::lock_guard relock(mutex_);
        if (!error_) error_ = flushed.error();
      }
      lock.lock();
    }
  }

  Status take_error() {
    std::lock_guard lock(mutex_);
    if (!error_) return {};
    Error error = *error_;
    error_.reset();
    return std::unexpected(error);
  }

  Store& store_;
  std::filesystem::path file_;
  int fd_ = -1;
  JournalOptions options_;
  std::mutex mutex_;  // guards pending_, closed_, error_ and the journal's writes
  std::mutex flush_mutex_;
  std::condition_variable wake_;
  std::vector<LogLine> pending_;
  bool closed_ = false;
  std::optional<Error> error_;
  std::thread flusher_;
};

}  // namespace

std::filesystem::path journal_dir(const std::filesystem::path& database) {
  return std::filesystem::path(database.string() + ".journal");
}

void append_journal_record(const LogLine& line, std::string& out) {
  fmt::format_to(std::back_inserter(out), "{} {} {} {}\n", line.step_index.value_or(-1),
                 static_cast<int>(line.stream), line.time, line.text.size());
  out += line.text;
  out += '\n';
}

std::string encode_journal_record(const LogLine& line) {
  std::string record;
  append_journal_record(line, record);
  return record;
}

std::vector<LogLine> decode_journal(std::string_view data, std::int64_t job_id) {
  std::vector<LogLine> lines;
  while (!data.empty()) {
    auto eol = data.find('\n');
    if (eol == std::string_view::npos) break;
    std::string_view header = data.substr(0, eol);
    std::string_view fields[4];
    std::size_t count = 0;
    while (count < 4 && !header.empty()) {
      auto space = header.find(' ');
      fields[count++] = header.substr(0, space);
      header = space == std::string_view::npos ? std::string_view{} : header.substr(space + 1);
    }
    int step = 0, stream = 0;
    std::int64_t time = 0;
    std::size_t length = 0;
    if (count != 4 || !header.empty() || !parse_number(fields[0], step) ||
        !parse_number(fields[1], stream) || !parse_number(fields[2], time) ||
        !parse_number(fields[3], length) || stream < 0 ||
        stream > static_cast<int>(LogStream::system))
      break;
    data.remove_prefix(eol + 1);
    if (data.size() < length + 1 || data[length] != '\n') break;  // torn: dropped
    LogLine line;
    line.job_id = job_id;
    if (step >= 0) line.step_index = step;
    line.stream = static_cast<LogStream>(stream);
    line.time = time;
    line.text = std::string(data.substr(0, length));
    lines.push_back(std::move(line));
    data.remove_prefix(length + 1);
  }
  return lines;
}

Result<std::unique_ptr<LogWriter>> open_journaled_log_writer(Store& store,
                                                             const std::filesystem::path& dir,
                                                             std::int64_t job_id,
                                                             JournalOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return fail(ErrorCode::io_error, "cannot create the log journal directory {}: {}", dir.string(),
                ec.message());
  auto file = dir / fmt::format("job-{}.log", job_id);
  // 0600: a journal holds what the store holds (store.h: already masked, but still a job's log).
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(ErrorCode::io_error, "cannot open the log journal {}: {}", file.string(),
                std::strerror(errno));
  return std::unique_ptr<LogWriter>(
      std::make_unique<JournaledLogWriter>(store, std::move(file), fd, options));
}

Result<std::size_t> recover_journals(Store& store, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::size_t{0};
  std::size_t added = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    std::int64_t job_id = 0;
    if (!name.starts_with("job-") || !name.ends_with(".log") ||
        !parse_number(std::string_view(name).substr(4, name.size() - 8), job_id))
      continue;
    auto job = store.get_job(job_id);
    if (!job) {
      if (job.error().code == ErrorCode::not_found) std::filesystem::remove(entry.path(), ec);
      continue;
    }
    KILN_TRY(auto run, store.get_run(job->run_id));
    if (run.status == RunStatus::queued || run.status == RunStatus::running) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto lines = decode_journal(text.str(), job_id);
    LogQuery query;
    query.run_id = job->run_id;
    query.job_id = job_id;
    KILN_TRY(auto stored, store.read_logs(query));
    if (stored.size() < lines.size()) {
      std::span<const LogLine> missing(lines.data() + stored.size(), lines.size() - stored.size());
      KILN_TRY_VOID(store.append_logs(missing));
      added += missing.size();
    }
    std::filesystem::remove(entry.path(), ec);
  }
  return added;
}

}  // namespace kiln::store
