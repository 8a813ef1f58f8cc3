#include <fmt/core.h>

#include "kiln/cli/app.h"

namespace kiln::cli {

void add_hipcheck_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("hipcheck", "report CUDA usage that blocks a HIP/ROCm port");
  cmd->callback([&exit_code] {
    fmt::print(stderr, "kiln: error: hipcheck is not implemented yet\n");
    exit_code = 3;
  });
}

}  // namespace kiln::cli
