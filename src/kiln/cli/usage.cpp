// kiln usage [--since 7d] [--by repo|branch|workflow|label|model|day] [--json]: GPU-hours held
// and busy, energy and cost of the stored jobs (report/usage.h); with --server, the served
// ones (GET /api/usage, priced by the server's kiln.yml).

#include <chrono>

#include <fmt/core.h>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/config/host_config.h"
#include "kiln/report/usage.h"

namespace kiln::cli {
namespace {

struct UsageArgs {
  std::string directory = ".";
  std::string store;
  std::string config;
  std::string since = "7d";
  std::string by = "repo";
  bool json = false;
  ClientArgs client;
};

// The rows of GET /api/usage as the local command's, for the same table.
report::Usage usage_of_json(const nlohmann::json& answer) {
  auto row_of = [](const nlohmann::json& item) {
    report::UsageRow row;
    auto number = [&](const char* key) {
      return item.contains(key) && item[key].is_number() ? item[key].get<double>() : 0.0;
    };
    row.key = json_text(item, "key");
    row.jobs = static_cast<int>(json_integer(item, "jobs"));
    row.gpu_jobs = static_cast<int>(json_integer(item, "gpu_jobs"));
    row.gpu_hours_held = number("gpu_hours_held");
    row.gpu_hours_busy = number("gpu_hours_busy");
    row.sampled_hours = number("sampled_gpu_hours");
    row.energy_kwh = number("energy_kwh");
    row.cost = number("cost");
    row.unpriced_hours = number("unpriced_gpu_hours");
    return row;
  };
  report::Usage usage;
  if (answer.contains("rows") && answer["rows"].is_array())
    for (const auto& item : answer["rows"]) usage.rows.push_back(row_of(item));
  if (answer.contains("total") && answer["total"].is_object())
    usage.total = row_of(answer["total"]);
  return usage;
}

int run_usage(const UsageArgs& args) {
  auto since = config::parse_duration(args.since);
  if (!since)
    return report_error(Error{ErrorCode::invalid_input, "--since: " + since.error().message, {}});
  auto by = report::parse_usage_by(args.by);
  if (!by) return report_error(by.error());
  report::UsageQuery query;
  query.by = *by;
  query.since = store::now_ms() - since->count();
  if (!args.client.server.empty()) {
    nlohmann::json answer;
    if (int rc =
            get(args.client, fmt::format("/api/usage?since={}&by={}", args.since, args.by), answer);
        rc != 0)
      return rc;
    if (args.json) {
      fmt::print("{}\n", answer.dump(2));
      return 0;
    }
    fmt::print("{}", report::format_usage(usage_of_json(answer), query));
    return 0;
  }
  auto config = config::find_host_config(
      args.config.empty() ? std::nullopt : std::optional<std::filesystem::path>(args.config));
  if (!config) return report_error(config.error());
  query.prices = config->gpu_prices;
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  auto usage = report::usage(**store, query);
  if (!usage) return report_error(usage.error());
  if (args.json)
    fmt::print("{}\n", report::to_json(*usage, query).dump(2));
  else
    fmt::print("{}", report::format_usage(*usage, query));
  return 0;
}

}  // namespace

void add_usage_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<UsageArgs>();
  auto* cmd = app.add_subcommand(
      "usage", "GPU-hours held and busy, energy and cost of the jobs, by repository, branch, ...");
  cmd->add_option("--since", args->since, "the jobs started this long ago or later (default 7d)");
  cmd->add_option("--by", args->by, "repo (default), branch, workflow, label, model or day");
  cmd->add_flag("--json", args->json, "JSON on stdout");
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->add_option("--config", args->config,
                  "host configuration with gpus.cost_per_hour (default: $KILN_CONFIG, else "
                  "/etc/kiln/kiln.yml)");
  add_client_options(cmd, args->client);
  cmd->get_option("--server")
      ->description(
          "the usage of this kiln server's runs (GET /api/usage) instead of the local "
          "store's");
  cmd->callback([args, &exit_code] { exit_code = run_usage(*args); });
}

}  // namespace kiln::cli
