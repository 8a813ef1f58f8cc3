// kiln runs: the runs in the store, newest first; with --server, those of a `kiln serve`
// (GET /api/runs), printed the same way.

#include <cstdint>
#include <ctime>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/core/time.h"

namespace kiln::cli {
namespace {

struct RunsArgs {
  std::string directory = ".";
  std::string store;
  int limit = 20;
  bool json = false;
  ClientArgs client;  // --server given: the served runs instead of the local store's
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

// A run of the API's JSON (server/api_json.cpp) as the store's record; nullopt when it is not one.
std::optional<store::Run> run_of_json(const nlohmann::json& item) {
  if (!item.is_object()) return std::nullopt;
  auto integer = [&](const char* key) { return json_integer(item, key); };
  auto text = [&](const char* key) { return json_text(item, key); };
  auto status = store::parse_run_status(text("status"));
  if (!status || integer("id") == 0) return std::nullopt;
  store::Run run;
  run.id = integer("id");
  run.number = integer("number");
  run.workflow_path = text("workflow");
  run.workflow_name = text("name");
  run.event = text("event");
  run.ref = text("ref");
  run.sha = text("sha");
  run.status = *status;
  run.created_at = integer("created_at");
  run.started_at = integer("started_at");
  run.finished_at = integer("finished_at");
  if (auto bisect = item.find("bisect"); bisect != item.end() && bisect->is_object())
    run.extra["bisect"] = *bisect;
  return run;
}

// The served runs, newest first; the exit code of the request when it failed.
std::expected<std::vector<store::Run>, int> served_runs(const RunsArgs& args) {
  nlohmann::json answer;
  if (int rc = get(args.client, fmt::format("/api/runs?limit={}", args.limit), answer); rc != 0)
    return std::unexpected(rc);
  std::vector<store::Run> runs;
  if (answer.is_object() && answer.contains("runs") && answer["runs"].is_array()) {
    for (const auto& item : answer["runs"]) {
      auto run = run_of_json(item);
      if (!run) {
        fmt::print(stderr, "kiln: error: {}/api/runs: an entry is not a run: {}\n",
                   args.client.server, item.dump());
        return std::unexpected(3);
      }
      runs.push_back(std::move(*run));
    }
    return runs;
  }
  fmt::print(stderr, "kiln: error: {}/api/runs: the server's answer is not a list of runs\n",
             args.client.server);
  return std::unexpected(3);
}

int list_runs(const RunsArgs& args) {
  std::vector<store::Run> runs;
  if (!args.client.server.empty()) {
    auto served = served_runs(args);
    if (!served) return served.error();
    runs = std::move(*served);
  } else {
    std::optional<std::filesystem::path> path;
    if (!args.store.empty()) path = args.store;
    auto store = open_store(path, args.directory);
    if (!store) return report_error(store.error());
    store::RunQuery query;
    query.limit = args.limit;
    auto listed = (*store)->list_runs(query);
    if (!listed) return report_error(listed.error());
    runs = std::move(*listed);
  }
  if (args.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& run : runs)
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
                     {"finished_at", run.finished_at},
                     {"bisect", run.extra.is_object() && run.extra.contains("bisect")
                                    ? nlohmann::ordered_json::parse(run.extra["bisect"].dump())
                                    : nlohmann::ordered_json(nullptr)}});
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  if (runs.empty()) {
    fmt::print("no runs yet\n");
    return 0;
  }
  fmt::print("{:>5}  {:<11}  {:<24}  {:<12}  {:<20}  {:<8}  {:<19}  {}\n", "ID", "STATUS",
             "WORKFLOW", "EVENT", "REF", "SHA", "STARTED", "DURATION");
  for (const auto& run : runs) {
    std::string duration =
        run.finished_at && run.started_at
            ? core::format_duration(std::chrono::milliseconds(run.finished_at - run.started_at))
            : "-";
    std::string ref = run.ref;
    if (ref.starts_with("refs/heads/")) ref = ref.substr(11);
    // A run `kiln serve` made for a bisection (server/bisect.h) is listed as one.
    const bool bisecting = run.extra.is_object() && run.extra.contains("bisect") &&
                           run.extra["bisect"].is_object() &&
                           run.extra["bisect"].contains("of_run");
    fmt::print("{:>5}  {:<11}  {:<24}  {:<12}  {:<20}  {:<8}  {:<19}  {}\n", run.id,
               store::to_string(run.status), run.workflow_name.substr(0, 24),
               bisecting ? "bisect" : run.event, ref.substr(0, 20), run.sha.substr(0, 8),
               local_time(run.started_at), duration);
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
  add_client_options(cmd, args->client);
  cmd->get_option("--server")
      ->description("list the runs of this kiln server (GET /api/runs) instead of the local store");
  cmd->callback([args, &exit_code] { exit_code = list_runs(*args); });
}

}  // namespace kiln::cli
