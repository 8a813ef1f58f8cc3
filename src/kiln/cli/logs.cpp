// kiln logs RUN [JOB]: the stored log of a run, or of one of its jobs.

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
};

int show_logs(const LogsArgs& args) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  auto detail = (*store)->get_run_detail(args.run);
  if (!detail) return report_error(detail.error());
  bool found = args.job.empty();
  for (const auto& job : detail->jobs) {
    if (!args.job.empty() && job.job.key != args.job && job.job.workflow_job_id != args.job)
      continue;
    found = true;
    store::LogQuery query;
    query.run_id = args.run;
    query.job_id = job.job.id;
    auto chunks = (*store)->read_logs(query);
    if (!chunks) return report_error(chunks.error());
    fmt::print("== {} ({}) ==\n", job.job.key, store::to_string(job.job.status));
    std::optional<int> step;
    for (const auto& chunk : *chunks) {
      if (chunk.step_index != step) {
        step = chunk.step_index;
        if (step && *step < static_cast<int>(job.steps.size()))
          fmt::print("-- step {}: {} --\n", *step + 1, job.steps[static_cast<size_t>(*step)].name);
      }
      fmt::print("{}\n", chunk.text);
    }
    if (!job.job.message.empty()) fmt::print("({})\n", job.job.message);
  }
  if (!found)
    return report_error(
        Error{ErrorCode::not_found, fmt::format("run {} has no job '{}'", args.run, args.job), {}});
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
  cmd->callback([args, &exit_code] { exit_code = show_logs(*args); });
}

}  // namespace kiln::cli
