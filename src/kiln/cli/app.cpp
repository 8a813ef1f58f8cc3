#include "kiln/cli/app.h"

#include <string_view>

#include "kiln/exec/process_tracker.h"
#include "kiln/exec/subreaper.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/core.h>

#include <exception>

namespace kiln::cli {

int main(int argc, char** argv) {
  // The watchdog of `kiln run` (exec::start_orphan_reaper): not a user command.
  if (argc == 3 && std::string_view(argv[1]) == "internal-reaper")
    return exec::run_orphan_reaper(argv[2]);
  // The holder of each step's processes (exec/subreaper.h), built beside kiln.
  std::error_code ec;
  if (auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) {
    auto holder = self.parent_path() / "kiln-subreaper";
    if (::access(holder.c_str(), X_OK) == 0) exec::set_subreaper_program(holder);
  }
  CLI::App app{"kiln: continuous integration on real GPU hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln 0.1.0");
  int exit_code = 0;
  add_run_command(app, exit_code);
  add_validate_command(app, exit_code);
  add_runs_command(app, exit_code);
  add_logs_command(app, exit_code);
  add_hipcheck_command(app, exit_code);
  add_gpus_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_report_command(app, exit_code);
  add_metrics_command(app, exit_code);
  add_serve_commands(app, exit_code);
  add_rerun_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad arguments are bad input: one line, exit code 2.
    fmt::print(stderr, "kiln: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln: internal error: {}\n", e.what());
    return 3;
  }
  return exit_code;
}

}  // namespace kiln::cli
