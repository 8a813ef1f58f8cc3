// kiln rerun RUN [--failed] [--server URL] [--token TOKEN]: POST /api/runs/RUN/rerun on a
// `kiln serve` (docs/serve.md). The server runs the run's workflow again at the same commit as
// its next attempt; --failed re-runs only the failed and cancelled jobs and what needs them.

#include <fmt/core.h>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"

namespace kiln::cli {

void add_rerun_command(CLI::App& app, int& exit_code) {
  struct RerunArgs {
    ClientArgs client;
    std::int64_t run = 0;
    bool failed = false;
  };
  auto args = std::make_shared<RerunArgs>();
  auto* cmd = app.add_subcommand(
      "rerun", "run a finished run's workflow again on the server (all jobs, or --failed)");
  cmd->add_option("RUN", args->run, "the run id (kiln runs, GET /api/runs)")->required();
  cmd->add_flag("--failed", args->failed,
                "re-run only failed and cancelled jobs and the jobs that need them; the others "
                "keep their results and outputs");
  add_client_options(cmd, args->client);
  cmd->callback([args, &exit_code] {
    exit_code = post(args->client, fmt::format("/api/runs/{}/rerun", args->run),
                     {{"failed_only", args->failed}});
  });
}

}  // namespace kiln::cli
