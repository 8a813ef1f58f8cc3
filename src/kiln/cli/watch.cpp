// kiln watch RUN [--server URL] [--interval SECONDS]: follows a served run's jobs until the run
// ends, as `gh run watch --exit-status` does: a line for each job whose status changed, then the
// run's end; exit 0 when it succeeded, 1 when it failed, was cancelled or interrupted, 2/3 as the
// other client commands (refused / unreachable).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include <fmt/core.h>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"
#include "kiln/store/records.h"

namespace kiln::cli {

void add_watch_command(CLI::App& app, int& exit_code) {
  struct WatchArgs {
    ClientArgs client;
    std::int64_t run = 0;
    double interval = 2;
  };
  auto args = std::make_shared<WatchArgs>();
  auto* cmd = app.add_subcommand("watch", "follow a served run's jobs until it ends");
  cmd->add_option("RUN", args->run, "the run id (kiln runs, GET /api/runs)")->required();
  cmd->add_option("--interval", args->interval, "seconds between looks at the run (default 2)")
      ->check(CLI::Range(0.05, 3600.0));
  add_client_options(cmd, args->client);
  cmd->callback([args, &exit_code] {
    std::map<std::int64_t, std::string> shown;  // job id -> the status last printed
    const auto path = fmt::format("/api/runs/{}", args->run);
    for (;;) {
      nlohmann::json run;
      if (int rc = get(args->client, path, run); rc != 0) {
        exit_code = rc;
        return;
      }
      if (!run.is_object() || !run.contains("jobs") || !run["jobs"].is_array()) {
        fmt::print(stderr, "kiln: error: {}: the server's answer is not a run\n", path);
        exit_code = 3;
        return;
      }
      for (const auto& job : run["jobs"]) {
        if (!job.is_object() || !job.contains("id") || !job["id"].is_number_integer()) continue;
        std::string status = json_text(job, "status");
        auto& last = shown[job["id"].get<std::int64_t>()];
        if (status == last) continue;
        last = status;
        std::string key = json_text(job, "key");
        std::string name = json_text(job, "name");
        fmt::print("{}: {}\n",
                   name.empty() || name == key ? key : fmt::format("{} ({})", key, name), status);
      }
      std::string status = json_text(run, "status");
      if (auto parsed = store::parse_run_status(status); parsed && store::is_terminal(*parsed)) {
        fmt::print("run {}: {}\n", args->run, status);
        exit_code = status == "success" ? 0 : 1;
        return;
      }
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::duration<double>(args->interval));
    }
  });
}

}  // namespace kiln::cli
