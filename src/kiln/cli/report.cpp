// kiln report RUN [--format text|json|html|junit] [-o FILE]
// One run as a report (docs/reports.md): jobs, steps, GPUs, test results, benchmarks. html is
// one self-contained file; junit is Kiln's own jobs and steps as JUnit XML for another CI.
// Exit codes: 0, 2 for an unknown run or format, 3 when the store or the output fails.
#include <fstream>

#include <fmt/core.h>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/report/report.h"

namespace kiln::cli {
namespace {

struct ReportArgs {
  std::int64_t run = 0;
  std::string format = "text";
  std::string output;
  std::string directory = ".";
  std::string store;
  int slowest = 10;
};

int run_report(const ReportArgs& args) {
  std::optional<std::filesystem::path> path;
  if (!args.store.empty()) path = args.store;
  auto store = open_store(path, args.directory);
  if (!store) return report_error(store.error());
  report::ReportOptions options;
  options.slowest = args.slowest;
  auto document = report::build_run_report(**store, args.run, options);
  if (!document) {
    auto error = document.error();
    if (error.code == ErrorCode::not_found) error.code = ErrorCode::invalid_input;
    return report_error(error);
  }
  std::string text;
  if (args.format == "json")
    text = document->dump(2) + "\n";
  else if (args.format == "html")
    text = report::render_html(*document);
  else if (args.format == "junit")
    text = report::render_junit(*document);
  else
    text = report::render_text(*document);
  if (args.output.empty() || args.output == "-") {
    fmt::print("{}", text);
    return 0;
  }
  std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    return report_error(
        make_error(ErrorCode::io_error, fmt::format("cannot write {}", args.output)).error());
  fmt::print(stderr, "kiln: wrote the {} report of run {} to {}\n", args.format, args.run,
             args.output);
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "a run's report: jobs, GPUs, tests, benchmarks");
  cmd->add_option("run", args->run, "run id (see kiln runs)")->required();
  cmd->add_option("--format", args->format, "text, json, html (one self-contained file) or junit")
      ->check(CLI::IsMember({"text", "json", "html", "junit"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "write to this file instead of stdout");
  cmd->add_option("--slowest", args->slowest, "how many of the slowest tests to show")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->add_option("-C,--directory", args->directory, "the git repository (default: .)");
  cmd->add_option("--store", args->store, "database (default: <repo>/.kiln/kiln.db)");
  cmd->callback([args, &exit_code] { exit_code = run_report(*args); });
}

}  // namespace kiln::cli
