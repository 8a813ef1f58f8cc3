// kiln hipcheck [PATH...] [--format text|json|sarif] [--baseline F] [--write-baseline F]
//               [--fail-on unsupported|hazard|any|none] [--extensions LIST] [-j N] [-o FILE]
//               [--rocm-version X.Y] [--config FILE]
// What still blocks a CUDA → HIP port (docs/hipcheck.md). Exit codes: 1 when findings of the
// --fail-on kind are left after the baseline, 2 on bad input, 3 when a file cannot be read.
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "kiln/cli/app.h"
#include "kiln/config/host_config.h"
#include "kiln/hipcheck/baseline.h"
#include "kiln/hipcheck/hipcheck.h"
#include "kiln/hipcheck/report.h"

namespace kiln::cli {

namespace {

struct HipcheckArgs {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string baseline;
  std::string write_baseline;
  std::string fail_on{hipcheck::fail_on_name(hipcheck::k_default_fail_on)};
  std::string extensions;
  std::string output;
  std::string rocm_version;
  std::vector<std::string> hip_macros;
  std::string config;
  unsigned jobs = 0;
};

int run_hipcheck(const HipcheckArgs& args) {
  namespace hc = kiln::hipcheck;
  hc::Options options;
  if (!args.paths.empty()) options.paths = args.paths;
  options.jobs = args.jobs;
  if (!args.extensions.empty()) {
    options.extensions.clear();
    std::stringstream list(args.extensions);
    for (std::string ext; std::getline(list, ext, ',');) {
      if (ext.empty()) continue;
      options.extensions.push_back(ext[0] == '.' ? ext : "." + ext);
    }
  }
  // kiln.yml's hipcheck section first; the command line wins over it.
  std::optional<std::filesystem::path> config_file;
  if (!args.config.empty()) config_file = args.config;
  auto config = config::find_host_config(config_file);
  if (!config) {
    fmt::print(stderr, "{}\n", config.error().to_string());
    return config.error().exit_code();
  }
  if (config->hipcheck.rocm_version) options.scan.rocm = *config->hipcheck.rocm_version;
  options.scan.hip_macros = config->hipcheck.hip_macros;
  for (const std::string& name : args.hip_macros) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9') ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            std::string::npos) {
      fmt::print(stderr, "kiln: error: --hip-macro: '{}' is not a macro name\n", name);
      return 2;
    }
    options.scan.hip_macros.push_back(name);
  }
  if (!args.rocm_version.empty()) {
    auto choice = hc::choose_rocm_version(args.rocm_version);
    if (!choice.version) {
      fmt::print(stderr, "kiln: error: --rocm-version: {}\n", choice.error);
      return 2;
    }
    options.scan.rocm = *choice.version;
  }
  auto fail_on = hc::parse_fail_on(args.fail_on);
  auto format = hc::parse_format(args.format);
  if (!fail_on || !format) {  // CLI11 checks these first; kept for a direct call
    fmt::print(stderr, "kiln: error: bad --fail-on or --format\n");
    return 2;
  }
  // Read the baseline before scanning, so a bad one fails fast.
  std::optional<hc::Baseline> baseline;
  if (!args.baseline.empty()) {
    auto loaded = hc::Baseline::load(args.baseline);
    if (!loaded) {
      fmt::print(stderr, "{}\n", loaded.error().to_string());
      return loaded.error().exit_code();
    }
    baseline = std::move(*loaded);
  }
  auto project = hc::read_project(options);
  if (!project) {
    fmt::print(stderr, "{}\n", project.error().to_string());
    return project.error().exit_code();
  }
  for (const std::string& warning : project->warnings) fmt::print(stderr, "{}\n", warning);

  // The report is written as the files are scanned: it is never held whole in memory.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> report_file(nullptr, &std::fclose);
  std::FILE* out = stdout;
  if (!args.output.empty()) {
    report_file.reset(std::fopen(args.output.c_str(), "wb"));
    if (!report_file) {
      fmt::print(stderr, "{}: error: cannot write the report\n", args.output);
      return 3;
    }
    out = report_file.get();
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> baseline_file(nullptr, &std::fclose);
  if (!args.write_baseline.empty()) {
    baseline_file.reset(std::fopen(args.write_baseline.c_str(), "wb"));
    if (!baseline_file) {
      fmt::print(stderr, "{}: error: cannot write the baseline\n", args.write_baseline);
      return 3;
    }
  }
  auto to = [](std::FILE* file) {
    return [file](std::string_view chunk) { std::fwrite(chunk.data(), 1, chunk.size(), file); };
  };

  hc::OutputContext context;
  context.fail_on = *fail_on;
  context.baseline_used = baseline.has_value();
  context.rocm = options.scan.rocm;
  std::error_code ec;
  context.working_directory = std::filesystem::current_path(ec).generic_string();
  auto writer = hc::make_writer(*format, context, to(out));
  std::unique_ptr<hc::ReportWriter> baseline_writer;
  if (baseline_file)
    baseline_writer = hc::make_baseline_writer(args.write_baseline, to(baseline_file.get()));
  hc::FileFilter filter;
  if (baseline) filter = [&baseline](hc::FileScan& file) { baseline->mark(file); };
  hc::Summary total = hc::scan_project(*project, options.jobs, options.scan, filter,
                                       [&](const hc::FileScan& file, const hc::Summary& counts) {
                                         writer->file(file, counts);
                                         if (baseline_writer) baseline_writer->file(file, counts);
                                       });
  writer->finish(total);
  if (std::fflush(out) != 0 || std::ferror(out)) {
    fmt::print(stderr, "{}: error: cannot write the report\n",
               args.output.empty() ? "stdout" : args.output);
    return 3;
  }
  if (baseline) {
    for (const hc::Baseline::Entry& e : baseline->stale())
      fmt::print(stderr,
                 "{}: warning: stale baseline entry {}:{} {} {} (accepts nothing now; "
                 "--write-baseline drops it)\n",
                 args.baseline, e.path, e.line, e.rule, e.name);
  }
  if (baseline_writer) {
    baseline_writer->finish(total);
    if (std::fflush(baseline_file.get()) != 0 || std::ferror(baseline_file.get())) {
      fmt::print(stderr, "{}: error: cannot write the baseline\n", args.write_baseline);
      return 3;
    }
    fmt::print(stderr, "hipcheck: wrote a baseline of {} findings to {}\n",
               total.references + total.hazards, args.write_baseline);
    return 0;  // writing a baseline accepts what is there
  }
  return hc::exit_code(total, *fail_on);
}

}  // namespace

void add_hipcheck_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<HipcheckArgs>();
  auto* cmd = app.add_subcommand(
      "hipcheck", "report CUDA usage and warp-size hazards that block a HIP/ROCm port");
  cmd->add_option("paths", args->paths,
                  "files and directories to scan (directories recursively, honouring "
                  ".gitignore); default: .");
  cmd->add_option("--format", args->format, "output format")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->capture_default_str();
  cmd->add_option("--baseline", args->baseline,
                  "accept the findings listed in this baseline file; only new ones fail");
  cmd->add_option("--write-baseline", args->write_baseline,
                  "write every current finding to this baseline file and exit 0");
  cmd->add_option("--fail-on", args->fail_on,
                  "exit 1 when findings of this kind are left: unsupported, hazard (and "
                  "unsupported), any, none")
      ->check(CLI::IsMember({"unsupported", "hazard", "any", "none"}))
      ->capture_default_str();
  cmd->add_option("--extensions", args->extensions,
                  "comma-separated file extensions to scan in directories (default: "
                  ".cu,.cuh,.c,.cc,.cpp,.cxx,.h,.hh,.hpp,.hip)");
  cmd->add_option("--rocm-version", args->rocm_version,
                  "judge support for this ROCm release, X.Y (default: kiln.yml "
                  "hipcheck.rocm_version, else the newest Kiln knows)");
  cmd->add_option("--hip-macro", args->hip_macros,
                  "a macro of the project that means \"building for HIP\" (repeatable; added to "
                  "USE_ROCM, __HIP_PLATFORM_AMD__, __HIPCC__, __HIP__, HIP_PLATFORM and kiln.yml "
                  "hipcheck.hip_macros)")
      ->allow_extra_args(false);
  cmd->add_option("--config", args->config,
                  "host configuration (default: $KILN_CONFIG, else /etc/kiln/kiln.yml); its "
                  "hipcheck section sets rocm_version and hip_macros");
  cmd->add_option("-j,--jobs", args->jobs, "threads (default: one per CPU)");
  cmd->add_option("-o,--output", args->output, "write the report to this file, not stdout");
  cmd->callback([args, &exit_code] { exit_code = run_hipcheck(*args); });
}

}  // namespace kiln::cli
