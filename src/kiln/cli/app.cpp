#include "kiln/cli/app.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "kiln/exec/process_tracker.h"
#include "kiln/exec/subreaper.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/core.h>

#include <exception>

namespace kiln::cli {
namespace {

// Default flags of `kiln run` from .kilnrc files (act's .actrc): ~/.kilnrc, then ./.kilnrc; one
// flag per line, `--flag value` (the value is the rest of the line, quotes around it removed),
// `#` comments. They come before the command line's flags, which win.
std::vector<std::string> kilnrc_flags() {
  std::vector<std::string> flags;
  std::vector<std::filesystem::path> files;
  if (const char* home = std::getenv("HOME"); home && *home) files.emplace_back(home);
  files.emplace_back(".");
  for (auto& dir : files) {
    std::ifstream in(dir / ".kilnrc");
    for (std::string line; std::getline(in, line);) {
      auto begin = line.find_first_not_of(" \t");
      if (begin == std::string::npos || line[begin] == '#') continue;
      auto end = line.find_last_not_of(" \t\r");
      line = line.substr(begin, end - begin + 1);
      auto space = line.find_first_of(" \t=");
      if (space == std::string::npos || !line.starts_with("-")) {
        flags.push_back(line);
        continue;
      }
      flags.push_back(line.substr(0, space));
      auto value = line.substr(line.find_first_not_of(" \t=", space));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front())
        value = value.substr(1, value.size() - 2);
      flags.push_back(value);
    }
  }
  return flags;
}

}  // namespace

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
  add_images_command(app, exit_code);
  add_runs_command(app, exit_code);
  add_logs_command(app, exit_code);
  add_hipcheck_command(app, exit_code);
  add_gpus_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_report_command(app, exit_code);
  add_metrics_command(app, exit_code);
  add_usage_command(app, exit_code);
  add_serve_commands(app, exit_code);
  add_rerun_command(app, exit_code);
  add_cancel_command(app, exit_code);
  add_watch_command(app, exit_code);
  add_exec_commands(app, exit_code);
  add_migrate_command(app, exit_code);
  add_tests_command(app, exit_code);
  add_agent_command(app, exit_code);
  add_completion_command(app, exit_code);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "run") {
    auto defaults = kilnrc_flags();
    args.insert(args.begin() + 1, defaults.begin(), defaults.end());
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  app.name(argc > 0 ? argv[0] : "kiln");
  try {
    app.parse(args);
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
