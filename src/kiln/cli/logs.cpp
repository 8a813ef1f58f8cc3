// kiln logs RUN [JOB]: the stored log of a run, or of one of its jobs; --follow keeps printing
// what a running run writes, --timestamps puts each line's time in front of it. With --server
// the run is a `kiln serve`'s, read through its API (GET /api/runs/ID and /api/runs/ID/logs).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"
#include "kiln/cli/common.h"

namespace kiln::cli {
namespace {

struct LogsArgs {
  std::string directory = ".";
  std::string store;
  std::int64_t run = 0;
  std::string job;
  bool timestamps = false;
  bool follow = false;
  ClientArgs client;  // --server given: the served run instead of the local store's
};

// "2026-12-02T01:04:15.123Z": the stored time of a line, as GitHub's raw logs write it.
std::string timestamp(store::TimeMs ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03}Z ", text, ms % 1000);
}

// Where the run and its lines come from: the local store or a server's API.
class LogSource {
 public:
  virtual ~LogSource() = default;
  virtual Result<store::RunDetail> get_run_detail(std::int64_t run) = 0;
  virtual Result<std::vector<store::LogChunk>> read_logs(const store::LogQuery& query) = 0;
};

class StoreSource final : public LogSource {
 public:
  explicit StoreSource(store::Store& store) : store_(store) {}
  Result<store::RunDetail> get_run_detail(std::int64_t run) override {
    return store_.get_run_detail(run);
  }
  Result<std::vector<store::LogChunk>> read_logs(const store::LogQuery& query) override {
    return store_.read_logs(query);
  }

 private:
  store::Store& store_;
};

// The JSON of server/api_json.cpp read back; a field that is missing or of another type reads as
// empty, an unknown status is an error (a server this client does not understand).
class ServerSource final : public LogSource {
 public:
  explicit ServerSource(const ClientArgs& client) : client_(client) {}

  Result<store::RunDetail> get_run_detail(std::int64_t run) override {
    KILN_TRY(auto answer, fetch(client_, fmt::format("/api/runs/{}", run)));
    if (!answer.is_object() || !answer.contains("jobs") || !answer["jobs"].is_array())
      return make_error(ErrorCode::io_error, fmt::format("/api/runs/{}: not a run", run));
    store::RunDetail detail;
    detail.run.id = json_integer(answer, "id");
    KILN_TRY(detail.run.status, store::parse_run_status(json_text(answer, "status")));
    for (const auto& item : answer["jobs"]) {
      if (!item.is_object()) continue;
      store::JobDetail job;
      job.job.id = json_integer(item, "id");
      job.job.key = json_text(item, "key");
      job.job.workflow_job_id = json_text(item, "job");
      job.job.message = json_text(item, "message");
      KILN_TRY(job.job.status, store::parse_job_status(json_text(item, "status")));
      if (item.contains("steps") && item["steps"].is_array())
        for (const auto& step_item : item["steps"]) {
          store::Step step;
          step.name = json_text(step_item, "name");
          job.steps.push_back(std::move(step));
        }
      detail.jobs.push_back(std::move(job));
    }
    return detail;
  }

  // Every line after query.after_seq, a page of k_page at a time.
  Result<std::vector<store::LogChunk>> read_logs(const store::LogQuery& query) override {
    constexpr int k_page = 5000;
    std::vector<store::LogChunk> out;
    std::int64_t after = query.after_seq;
    for (;;) {
      std::string path =
          fmt::format("/api/runs/{}/logs?after={}&limit={}", query.run_id, after, k_page);
      if (query.job_id) path += fmt::format("&job={}", *query.job_id);
      KILN_TRY(auto answer, fetch(client_, path));
      if (!answer.is_object() || !answer.contains("lines") || !answer["lines"].is_array())
        return make_error(ErrorCode::io_error, fmt::format("{}: not a page of log lines", path));
      for (const auto& line : answer["lines"]) {
        if (!line.is_object()) continue;
        store::LogChunk chunk;
        chunk.seq = json_integer(line, "seq");
        chunk.job_id = json_integer(line, "job_id");
        if (auto step = line.find("step"); step != line.end() && step->is_number_integer())
          chunk.step_index = step->get<int>();
        chunk.text = json_text(line, "text");
        chunk.time = json_integer(line, "time");
        after = std::max(after, chunk.seq);
        out.push_back(std::move(chunk));
      }
      if (answer["lines"].size() < static_cast<size_t>(k_page)) return out;
    }
  }

 private:
  const ClientArgs& client_;
};

class Printer {
 public:
  Printer(const LogsArgs& args, LogSource& store) : args_(args), store_(store) {}

  // Prints the chunks stored since the last call; false with an error when the store fails.
  Result<bool> print_new() {
    KILN_TRY(auto detail, store_.get_run_detail(args_.run));
    bool found = args_.job.empty();
    for (const auto& job : detail.jobs) {
      if (!args_.job.empty() && job.job.key != args_.job && job.job.workflow_job_id != args_.job)
        continue;
      found = true;
      auto& seen = seen_[job.job.id];
      store::LogQuery query;
      query.run_id = args_.run;
      query.job_id = job.job.id;
      query.after_seq = seen.seq;
      KILN_TRY(auto chunks, store_.read_logs(query));
      bool finished = job.job.status != store::JobStatus::queued &&
                      job.job.status != store::JobStatus::running &&
                      job.job.status != store::JobStatus::waiting;
      if (!seen.header && (!chunks.empty() || finished || !args_.follow)) {
        fmt::print("== {} ({}) ==\n", job.job.key,
                   args_.follow && !finished ? "running" : store::to_string(job.job.status));
        seen.header = true;
      }
      for (const auto& chunk : chunks) {
        if (chunk.step_index != seen.step) {
          seen.step = chunk.step_index;
          if (seen.step && *seen.step < static_cast<int>(job.steps.size()))
            fmt::print("-- step {}: {} --\n", *seen.step + 1,
                       job.steps[static_cast<size_t>(*seen.step)].name);
        }
        fmt::print("{}{}\n", args_.timestamps ? timestamp(chunk.time) : std::string{}, chunk.text);
        seen.seq = chunk.seq;
      }
      if ((finished || !args_.follow) && !seen.done) {
        seen.done = true;
        if (args_.follow)
          fmt::print("== {} {} ==\n", job.job.key, store::to_string(job.job.status));
        if (!job.job.message.empty()) fmt::print("({})\n", job.job.message);
      }
    }
    std::fflush(stdout);
    if (!found)
      return make_error(ErrorCode::not_found,
                        fmt::format("run {} has no job '{}'", args_.run, args_.job));
    return detail.run.status == store::RunStatus::queued ||
           detail.run.status == store::RunStatus::running;
  }

 private:
  struct Seen {
    std::int64_t seq = 0;
    std::optional<int> step;
    bool header = false;
    bool done = false;
  };
  const LogsArgs& args_;
  LogSource& store_;
  std::map<std::int64_t, Seen> seen_;
};

int show_logs(const LogsArgs& args) {
  std::unique_ptr<store::Store> local;
  std::unique_ptr<LogSource> source;
  if (!args.client.server.empty()) {
    source = std::make_unique<ServerSource>(args.client);
  } else {
    std::optional<std::filesystem::path> path;
    if (!args.store.empty()) path = args.store;
    auto store = open_store(path, args.directory);
    if (!store) return report_error(store.error());
    local = std::move(*store);
    source = std::make_unique<StoreSource>(*local);
  }
  Printer printer(args, *source);
  while (true) {
    auto running = printer.print_new();
    if (!running) return report_error(running.error());
    if (!args.follow || !*running) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // A run that finished while we looked: what it wrote last.
  if (args.follow) {
    auto last = printer.print_new();
    if (!last) return report_error(last.error());
  }
  return 0;
}

}  // namespace

void add_logs_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LogsArgs>();
  auto* cmd = app.add_subcommand("logs", "print the log of a run or of one of its jobs");
  cmd->add_option("run", args->run, "run id (see kiln runs)")->required();
  cmd->add_option("job", args->job, "job key or id (default: every job)");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_flag("-t,--timestamps", args->timestamps,
                "put each line's time (UTC, milliseconds) in front of it");
  cmd->add_flag("-f,--follow", args->follow, "keep printing what the run writes until it finishes");
  add_client_options(cmd, args->client);
  cmd->get_option("--server")
      ->description("read the run of this kiln server (its API) instead of the local store");
  cmd->callback([args, &exit_code] { exit_code = show_logs(*args); });
}

}  // namespace kiln::cli
