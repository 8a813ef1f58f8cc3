// kiln logs RUN [JOB]: the stored log of a run, or of one of its jobs; --follow keeps printing
// what a running run writes, --timestamps puts each line's time in front of it.

#include <chrono>
#include <ctime>
#include <map>
#include <thread>

#include <fmt/core.h>

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

class Printer {
 public:
  Printer(const LogsArgs& args, store::Store& store) : args_(args), store_(store) {}

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
  store::Store& store_;
  std::map<std::int64_t, Seen> seen_;
};

int show_logs(const LogsArgs& args) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  Printer printer(args, **store);
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
  cmd->callback([args, &exit_code] { exit_code = show_logs(*args); });
}

}  // namespace kiln::cli
