// kiln cancel RUN [--server URL] [--token TOKEN]: POST /api/runs/RUN/cancel on a `kiln serve`
// (docs/serve.md). The server stops the run's steps as for Ctrl-C; the run ends `cancelled`.
// A run that this server is not running (finished, unknown, another replica's) is refused: exit 2.

#include <fmt/core.h>

#include "kiln/cli/api_client.h"
#include "kiln/cli/app.h"

namespace kiln::cli {

void add_cancel_command(CLI::App& app, int& exit_code) {
  struct CancelArgs {
    ClientArgs client;
    std::int64_t run = 0;
  };
  auto args = std::make_shared<CancelArgs>();
  auto* cmd = app.add_subcommand("cancel", "cancel a run that is running on the server");
  cmd->add_option("RUN", args->run, "the run id (kiln runs, GET /api/runs)")->required();
  add_client_options(cmd, args->client);
  cmd->callback([args, &exit_code] {
    exit_code =
        post(args->client, fmt::format("/api/runs/{}/cancel", args->run), nlohmann::json::object());
  });
}

}  // namespace kiln::cli
