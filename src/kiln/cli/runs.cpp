// kiln runs: the runs in the store, newest first.

#include <ctime>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"

namespace kiln::cli {
namespace {

struct RunsArgs {
  std::string directory = ".";
  std::string store;
  int limit = 20;
  bool json = false;
};

std::string local_time(store::TimeMs ms) {
  if (ms == 0) return "-";
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

int list_runs(const RunsArgs& args) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  store::RunQuery query;
  query.limit = args.limit;
  auto runs = (*store)->list_runs(query);
  if (!runs) return report_error(runs.error());
  if (args.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& run : *runs)
      out.push_back({{"id", run.id},
                     {"number", run.number},
                     {"workflow", run.workflow_path},
                     {"name", run.workflow_name},
                     {"event", run.event},
                     {"ref", run.ref},
                     {"sha", run.sha},
                     {"status", store::to_string(run.status)},
                     {"created_at", run.created_at},
                     {"started_at", run.started_at},
                     {"finished_at", run.finished_at}});
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  if (runs->empty()) {
    fmt::print("no runs yet\n");
    return 0;
  }
  fmt::print("{:>5}  {:<11}  {:<24}  {:<12}  {:<20}  {:<8}  {:<19}  {}\n", "ID", "STATUS",
             "WORKFLOW", "EVENT", "REF", "SHA", "STARTED", "DURATION");
  for (const auto& run : *runs) {
    std::string duration =
        run.finished_at && run.started_at
            ? format_duration(std::chrono::milliseconds(run.finished_at - run.started_at))
            : "-";
    std::string ref = run.ref;
    if (ref.starts_with("refs/heads/")) ref = ref.substr(11);
    fmt::print("{:>5}  {:<11}  {:<24}  {:<12}  {:<20}  {:<8}  {:<19}  {}\n", run.id,
               store::to_string(run.status), run.workflow_name.substr(0, 24), run.event,
               ref.substr(0, 20), run.sha.substr(0, 8), local_time(run.started_at), duration);
  }
  return 0;
}

}  // namespace

void add_runs_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunsArgs>();
  auto* cmd = app.add_subcommand("runs", "list runs, newest first");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_option("-n,--limit", args->limit, "how many (default 20, 0: all)");
  cmd->add_flag("--json", args->json, "JSON array on stdout");
  cmd->callback([args, &exit_code] { exit_code = list_runs(*args); });
}

}  // namespace kiln::cli
